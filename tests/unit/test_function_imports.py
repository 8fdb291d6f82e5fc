"""The functions' handlers are edges like `rearview.api`: they reach adapters only through the composition root.

import-linter checks the contracts of pyproject.toml inside the `rearview` package only; `functions/<name>/handler.py`
is no module of it, so this test holds the handlers to the edges' contract ("The edges reach adapters only through
the composition root"), read from pyproject.toml so that both say the same.
"""

from __future__ import annotations

import ast
import tomllib
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]
HANDLERS = sorted((REPO_ROOT / "functions").glob("*/handler.py"))
EDGE_CONTRACT = "The edges reach adapters only through the composition root"


def _edge_contract() -> dict[str, list[str]]:
    config = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    (contract,) = [c for c in config["tool"]["importlinter"]["contracts"] if c["name"] == EDGE_CONTRACT]
    return contract


def imported_modules(path: Path) -> set[str]:
    """Every module a file imports, at any depth (lazy imports inside functions included)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
            found.update(f"{node.module}.{alias.name}" for alias in node.names)
    return found


def test_every_function_is_checked() -> None:
    assert {p.parent.name for p in HANDLERS} >= {"authorizer", "recall", "write", "write_worker", "mcp"}


@pytest.mark.parametrize("handler", HANDLERS, ids=lambda p: p.parent.name)
def test_a_handler_reaches_no_adapter_but_through_the_composition_root(handler: Path) -> None:
    forbidden = _edge_contract()["forbidden_modules"]
    reached = sorted(
        name for name in imported_modules(handler) for f in forbidden if name == f or name.startswith(f + ".")
    )
    assert reached == [], f"{handler.relative_to(REPO_ROOT)} imports {reached}: go through rearview.bootstrap"


def test_the_check_sees_an_adapter_import(tmp_path: Path) -> None:
    handler = tmp_path / "handler.py"
    handler.write_text("def handler(event, context):\n    from rearview.adapters.dynamodb import DynamoDBKeyStore\n")
    assert "rearview.adapters.dynamodb" in imported_modules(handler)
