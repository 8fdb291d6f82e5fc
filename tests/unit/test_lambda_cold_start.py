"""What a Lambda function's init does, in a fresh interpreter with the environment the CDK app gives it: the heavy
modules a handler does not need at import stay out of it, and with SnapStart the hooks put the first invocation's
imports into the snapshot without building anything that must differ per environment.

The Lambda runtime's `snapshot_restore_py` exists only inside Lambda's Python runtimes; a stand-in with its two
registration functions (recording what is registered) takes its place on the path, and the test calls the hooks the
way Lambda would: before the snapshot, then after a restore."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

# Each test imports a handler in a fresh interpreter (a subprocess): slow, in `make test`.
pytestmark = [pytest.mark.unit, pytest.mark.slow]

REPO = Path(__file__).resolve().parents[2]
ENV = {
    "REARVIEW_BACKEND": "aws",
    "REARVIEW_EMBEDDER": "bedrock",
    "REARVIEW_AWS__REGION": "us-east-1",
    "REARVIEW_AWS__TABLE_NAME": "rearview",
    "REARVIEW_AWS__OPENSEARCH_ENDPOINT": "https://example.aoss.amazonaws.com",
    "POWERTOOLS_METRICS_NAMESPACE": "Rearview",
}
FUNCTIONS = sorted(p.parent.name for p in (REPO / "functions").glob("*/handler.py"))

FAKE_RUNTIME_HOOKS = """
before, after = [], []

def register_before_snapshot(func, *args, **kwargs):
    before.append((func, args, kwargs))
    return func

def register_after_restore(func, *args, **kwargs):
    after.append((func, args, kwargs))
    return func
"""

PROBE = """
import importlib.util, json, random, sys, threading
spec = importlib.util.spec_from_file_location("handler", {handler!r})
handler = importlib.util.module_from_spec(spec)
sys.path.insert(0, {folder!r})
spec.loader.exec_module(handler)

def state():
    boto3 = sys.modules.get("boto3")
    runtime = getattr(handler, "runtime", None)
    return {{
        "modules": sorted(sys.modules),
        "threads": threading.active_count(),
        "boto3_session": None if boto3 is None else repr(boto3.DEFAULT_SESSION),
        "services_built": None if runtime is None else runtime._services is not None,
    }}

found = {{"init": state()}}
hooks = sys.modules.get("snapshot_restore_py")
if hooks is not None:
    found["hooks"] = [len(hooks.before), len(hooks.after)]
    for func, args, kwargs in reversed(hooks.before):  # Lambda runs them in reverse order of registration
        func(*args, **kwargs)
    found["snapshot"] = state()
    seeded = random.getstate()
    for func, args, kwargs in hooks.after:
        func(*args, **kwargs)
    found["reseeded"] = random.getstate() != seeded
print(json.dumps(found))
"""


def _probe(function: str, hooks_dir: Path | None = None) -> dict[str, Any]:
    handler = REPO / "functions" / function / "handler.py"
    path = [str(REPO / "layers"), *([str(hooks_dir)] if hooks_dir else [])]
    env = {**os.environ, **ENV, "PYTHONPATH": os.pathsep.join(path)}
    code = PROBE.format(handler=str(handler), folder=str(handler.parent))
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


@pytest.fixture(scope="module")
def hooks_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("runtime")
    (folder / "snapshot_restore_py.py").write_text(textwrap.dedent(FAKE_RUNTIME_HOOKS), encoding="utf-8")
    return folder


@pytest.mark.parametrize("function", FUNCTIONS)
def test_init_imports_no_mcp_sdk_builds_nothing_and_starts_no_thread(function: str) -> None:
    init = _probe(function)["init"]
    modules = set(init["modules"])
    assert "mcp" not in modules, "the MCP SDK loads on the mcp function's first call, not at init"
    assert "snapshot_restore_py" not in modules, "outside Lambda no hook is registered"
    assert init["threads"] == 1
    assert init["boto3_session"] in (None, "None")
    assert init["services_built"] in (None, False)


@pytest.mark.parametrize("function", ["authorizer", "mcp"])
def test_the_authorizer_and_mcp_do_not_import_numpy_or_the_ports_at_init(function: str) -> None:
    modules = set(_probe(function)["init"]["modules"])
    assert "numpy" not in modules
    assert "rearview.ports" not in modules
    assert "rearview.adapters.dynamodb.memory_store" not in modules


def test_with_snapstart_the_mcp_snapshot_holds_its_first_call_s_imports_and_nothing_unique(hooks_dir: Path) -> None:
    found = _probe("mcp", hooks_dir)
    assert found["hooks"] == [1, 1]
    before, after = set(found["init"]["modules"]), set(found["snapshot"]["modules"])
    assert "mcp" not in before
    for module in ("mcp.server.streamable_http_manager", "rearview.api.mcp", "rearview.bootstrap", "boto3"):
        assert module in after, module
    # Imports only: no services, no boto3 session (so no credentials), no event-loop thread in the snapshot.
    assert found["snapshot"]["services_built"] is False
    assert found["snapshot"]["boto3_session"] == "None"
    assert found["snapshot"]["threads"] == 1
    assert found["reseeded"] is True


@pytest.mark.parametrize("function", ["recall", "write", "write_worker"])
def test_with_snapstart_every_function_primes_the_services_modules_but_not_the_mcp_sdk(
    function: str, hooks_dir: Path
) -> None:
    found = _probe(function, hooks_dir)
    after = set(found["snapshot"]["modules"])
    assert {"rearview.bootstrap", "rearview.adapters.dynamodb.memory_store", "rearview.api.http"} <= after
    assert "mcp" not in after
    assert found["snapshot"]["services_built"] is False and found["snapshot"]["boto3_session"] == "None"


def test_with_snapstart_the_authorizer_primes_the_key_store_and_builds_no_client(hooks_dir: Path) -> None:
    found = _probe("authorizer", hooks_dir)
    after = set(found["snapshot"]["modules"])
    # The key store comes through the composition root, whose import the snapshot holds (with every service's).
    assert {"rearview.bootstrap", "rearview.adapters.dynamodb.key_store", "boto3"} <= after
    assert "rearview.adapters.dynamodb.memory_store" not in after
    assert found["snapshot"]["boto3_session"] == "None"
    assert found["reseeded"] is True


def test_the_dynamodb_package_exports_every_name_lazily() -> None:
    import rearview.adapters.dynamodb as package

    for name in package.__all__:
        assert getattr(package, name) is not None
    with pytest.raises(AttributeError, match="no attribute 'Nope'"):
        package.Nope  # noqa: B018
