"""What the layer build keeps: every AWS service a function's client calls keeps its botocore model, and nothing the
build prunes is imported by the library a function loads."""

from __future__ import annotations

import ast
import importlib.util
import sys
from pathlib import Path
from types import ModuleType

REPO_ROOT = Path(__file__).resolve().parents[2]


def _build_layer() -> ModuleType:
    spec = importlib.util.spec_from_file_location("build_layer", REPO_ROOT / "infra" / "build_layer.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("build_layer", module)
    spec.loader.exec_module(module)
    return module


def _sources() -> list[Path]:
    library = REPO_ROOT / "layers" / "rearview"
    pruned = [library / "cli", library / "emulator"]
    files = [p for p in library.rglob("*.py") if not any(p.is_relative_to(d) for d in pruned)]
    return files + sorted((REPO_ROOT / "functions").rglob("*.py"))


def _client_services(path: Path) -> set[str]:
    """The service names of `boto3_client("...")` and `boto3.client("...")` calls in a module."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if not isinstance(node, ast.Call) or not node.args:
            continue
        name = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
        first = node.args[0]
        if name in ("boto3_client", "client") and isinstance(first, ast.Constant) and isinstance(first.value, str):
            found.add(first.value)
    return found


def test_every_client_a_function_builds_keeps_its_service_model() -> None:
    kept = _build_layer().BOTOCORE_SERVICES
    used = set().union(*(_client_services(p) for p in _sources()))
    assert {"dynamodb", "sqs", "bedrock-runtime"} <= used
    assert used <= kept, f"pruned from the layer but called: {sorted(used - kept)}"


def test_what_the_layer_leaves_out_is_not_imported_by_what_it_keeps() -> None:
    layer = _build_layer()
    left_out = {p.split("/", 1)[1] for p in layer.EXCLUDED_PACKAGES}
    for path in _sources():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module]
            elif isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            else:
                continue
            for name in names:
                parts = name.split(".")
                assert not (parts[0] == "rearview" and len(parts) > 1 and parts[1] in left_out), f"{path}: {name}"
                assert parts[0] not in {"grpc", "google"}, f"{path}: {name}"
