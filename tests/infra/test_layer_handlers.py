"""Every function of the template, run with only what Lambda gives it: python3.13 in isolated mode (`-I -S`: no
site-packages of any environment) with the function's code directory, the layer's `python/` directory and what the
runtime provides on its path, invoked with the sample events of `events/`, against moto and the OpenSearch double.

The layer is built as `make layer` builds it (`infra/build_layer.py`, arm64 wheels for Lambda); this machine runs
x86_64, so the handlers run on a second build of the same lock for the local platform, and the test checks that the
two hold the same distributions at the same versions. What the runtime provides is the SnapStart hooks' module
(`snapshot_restore_py`); boto3 is the layer's own, which Lambda's path puts before the runtime's copy (AWS documents
no fixed version of that copy: it depends on the runtime's release and the region), so the functions here get no
runtime boto3 at all and must not need one.

`REARVIEW_LAYER_UNDER_TEST=<dir>` runs the handlers on a layer built elsewhere (its `python/`) instead: how the
failure of a layer built without the X-Ray SDK is shown.
"""

from __future__ import annotations

import base64
import json
import os
import platform
import shutil
import struct
import subprocess
import sys
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from rearview.emulator.containers import FunctionError, LambdaRuntime
from rearview.emulator.emulator import Emulator, EmulatorOptions
from support.emulator_process import free_port
from support.events import load_event
from support.opensearch_double import OpenSearchDouble

pytestmark = [pytest.mark.infra, pytest.mark.slow]

REPO_ROOT = Path(__file__).resolve().parents[2]
LAMBDA_PLATFORMS = ("manylinux2014_aarch64", "manylinux_2_28_aarch64")
LOCAL_PLATFORMS = tuple(f"{tag}_{platform.machine()}" for tag in ("manylinux2014", "manylinux_2_28"))
# What the python3.13 runtime provides that the functions may import: the SnapStart hooks.
RUNTIME_PACKAGES = ("snapshot-restore-py==1.0.0",)
ADMIN_TOKEN = "layer-test-admin-token"
# The template's default (rearview:embeddingDim): the index index_setup makes, and the hashing embedder's vectors.
EMBEDDING_DIM = 512


def python313() -> Path | None:
    """The interpreter the functions run on (as the Makefile's PYTHON313 finds it)."""
    candidates = sorted(Path.home().glob(".pyenv/versions/3.13*/bin/python3.13"))
    found = shutil.which("python3.13")
    for candidate in [*map(str, candidates), found]:
        if candidate and Path(candidate).is_file():
            return Path(candidate)
    return None


def build_layer(out: Path, platforms: tuple[str, ...], wheel: Path, lock: Path | None = None) -> Path:
    command = [sys.executable, str(REPO_ROOT / "infra" / "build_layer.py"), "--out", str(out), "--wheel", str(wheel)]
    command += [arg for p in platforms for arg in ("--platform", p)]
    if lock is not None:
        command += ["--lock", str(lock)]
    subprocess.run(command, check=True, cwd=REPO_ROOT)
    return out


def distributions(python_dir: Path) -> set[str]:
    """`name==version` of the distributions installed in a layer's python/ directory."""
    found = set()
    for info in python_dir.glob("*.dist-info"):
        name, _, version = info.name.removesuffix(".dist-info").partition("-")
        found.add(f"{name.lower().replace('_', '-')}=={version}")
    return found


class ResponseCatcher(ThreadingHTTPServer):
    """Stands for CloudFormation's pre-signed response URL: keeps what the custom resource PUTs."""

    def __init__(self) -> None:
        self.bodies: list[dict[str, Any]] = []
        catcher = self

        class Handler(BaseHTTPRequestHandler):
            def do_PUT(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                catcher.bodies.append(json.loads(self.rfile.read(length)))
                self.send_response(200)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the base class's name
                pass

        super().__init__(("127.0.0.1", 0), Handler)


@dataclass
class Deployed:
    emulator: Emulator
    layer: Path
    lambda_layer: Path | None
    responses: ResponseCatcher

    def log_tail(self, function: str, lines: int = 30) -> str:
        (container,) = [c for c in self.emulator.containers.values() if c.name == function]
        return "\n".join(container.log_path.read_text(errors="replace").splitlines()[-lines:])

    def invoke(self, function: str, event: dict[str, Any]) -> Any:
        (container,) = [c for c in self.emulator.containers.values() if c.name == function]
        # A bounded time: index_setup retries until its deadline (600 s on AWS) while the index cannot be made.
        return container.invoke(event, timeout_seconds=90)


@pytest.fixture(scope="module")
def deployed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Deployed]:
    interpreter = python313()
    if interpreter is None:
        pytest.skip("python3.13 (the functions' runtime) is not installed: pyenv install 3.13")
    if shutil.which("node") is None:
        pytest.skip("synthesising the template needs Node.js")
    root = tmp_path_factory.mktemp("layer")
    given = os.environ.get("REARVIEW_LAYER_UNDER_TEST")
    if given:
        lambda_layer, layer = None, Path(given).resolve()
        synth_layer = layer
    else:
        # The project's wheel is pure Python: built once, for both platforms.
        wheels = root / "wheels"
        subprocess.run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--wheel-dir", str(wheels),
                        str(REPO_ROOT)], check=True)  # fmt: skip
        (wheel,) = wheels.glob("rearview_memory-*.whl")
        lambda_layer = build_layer(root / "layer-lambda", LAMBDA_PLATFORMS, wheel)
        layer = build_layer(root / "layer-local", LOCAL_PLATFORMS, wheel, lambda_layer / "requirements.lock")
        synth_layer = lambda_layer
    runtime_dir = root / "runtime"
    pip = [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--target", str(runtime_dir)]
    subprocess.run([*pip, *RUNTIME_PACKAGES], check=True)
    outdir = root / "cdk.out"
    subprocess.run(
        [sys.executable, str(REPO_ROOT / "infra" / "app.py"), "--outdir", str(outdir),
         "-c", "rearview:search=domain", "-c", "rearview:embedder=hashing",
         "-c", f"rearview:layerDir={synth_layer}", "-c", f"rearview:functionsDir={REPO_ROOT / 'functions'}"],
        check=True, cwd=REPO_ROOT, env={**os.environ, "JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION": "18,20"},
    )  # fmt: skip
    responses = ResponseCatcher()
    threading.Thread(target=responses.serve_forever, daemon=True).start()
    with OpenSearchDouble() as search:
        emulator = Emulator(
            EmulatorOptions(
                template=outdir / "Rearview.template.json",
                data_dir=root / "data",
                port=free_port(),
                search="opensearch",
                opensearch_url=search.url,
                schedule_seconds=3600,
                api_token=ADMIN_TOKEN,
                runtime=LambdaRuntime(interpreter, layer / "python", (runtime_dir,)),
            )
        )
        try:
            emulator.start()
            yield Deployed(emulator, layer, lambda_layer, responses)
        finally:
            emulator.stop()
            responses.shutdown()


def test_the_local_layer_holds_what_the_lambda_layer_holds(deployed: Deployed) -> None:
    if deployed.lambda_layer is None:
        pytest.skip("a layer given by REARVIEW_LAYER_UNDER_TEST")
    lambda_set = distributions(deployed.lambda_layer / "python")
    assert distributions(deployed.layer / "python") == lambda_set
    assert "aws-xray-sdk" in {d.split("==")[0] for d in lambda_set}


def _http_ok(response: dict[str, Any], *statuses: int) -> dict[str, Any]:
    assert response["statusCode"] in statuses, response
    return response


def _no_batch_failures(response: dict[str, Any]) -> None:
    assert response == {"batchItemFailures": []}, response


def _with_dimension(event: dict[str, Any], dim: int) -> dict[str, Any]:
    """The stream sample with a vector of the deployed index's dimension (the sample carries a short one)."""
    vector = base64.b64encode(struct.pack(f"<{dim}f", *([1.0 / dim**0.5] * dim))).decode()
    for record in event["Records"]:
        record["dynamodb"]["NewImage"]["vec"] = {"B": vector}
    return event


def _load_with_vectors(dim: int) -> dict[str, Any]:
    """The load sample with each line's vector (where writes are queued, the write function embeds none)."""
    body = json.loads(load_event("memory_load")["body"])
    for i, item in enumerate(body["items"]):
        item["vector"] = [1.0 if j == i else 0.0 for j in range(dim)]
    return load_event("memory_load", body=body)


def _calls(deployed: Deployed) -> dict[str, list[tuple[str, dict[str, Any]]]]:
    """Each function's sample events, in the order a deployment meets them."""
    token = f"Bearer {ADMIN_TOKEN}"
    catcher = deployed.responses.server_address
    response_url = f"http://{catcher[0]!s}:{catcher[1]}/cloudformation-response"
    return {
        "index_setup": [("create", load_event("index_setup_create", kind="cloudformation", ResponseURL=response_url))],
        "authorizer": [
            ("request", load_event("request", kind="authorizer", identitySource=[token])),
            ("without token", load_event("request_without_token", kind="authorizer")),
        ],
        "write": [
            ("memory_write", load_event("memory_write")),
            ("working_put", load_event("working_put")),
            ("memory_load", _load_with_vectors(EMBEDDING_DIM)),
        ],
        "write_worker": [("queued write", load_event("write_queue_message", kind="sqs"))],
        "index_sync": [("insert", _with_dimension(load_event("insert_episode", kind="dynamodb"), EMBEDDING_DIM))],
        "recall": [
            ("recall", load_event("recall")),
            ("health", load_event("health")),
            ("ui_page", load_event("ui_page")),
        ],
        "forget": [("forget", load_event("forget")), ("sweep", load_event("retention_schedule", kind="eventbridge"))],
        "erase": [("namespace", load_event("namespace_erase"))],
        "consolidate": [
            ("consolidate", load_event("consolidate")),
            ("schedule", load_event("consolidate_schedule", kind="eventbridge")),
        ],
        "consolidation_worker": [("job", load_event("consolidation_job", kind="sqs"))],
        "mcp": [
            ("initialize", load_event("mcp_initialize", headers={"authorization": token})),
            ("tools/list", load_event("mcp_tools_list", headers={"authorization": token})),
        ],
    }


def test_every_function_runs_with_only_its_code_the_layer_and_the_runtime(deployed: Deployed) -> None:
    calls = _calls(deployed)
    assert set(calls) == {c.name for c in deployed.emulator.containers.values()}, "a function without sample events"
    failures: dict[str, str] = {}
    results: dict[str, Any] = {}
    for function, events in calls.items():
        for label, event in events:
            try:
                results[f"{function} {label}"] = deployed.invoke(function, event)
            except FunctionError as exc:
                failures[f"{function} {label}"] = f"{exc.error_type}: {exc.message}"
    assert not failures, json.dumps(failures, indent=2)

    assert results["authorizer request"]["isAuthorized"] is True
    assert results["authorizer without token"] == {"isAuthorized": False}
    assert [r["Status"] for r in deployed.responses.bodies] == ["SUCCESS"]
    _http_ok(results["write memory_write"], 202)
    _http_ok(results["write working_put"], 200)
    assert json.loads(_http_ok(results["write memory_load"], 200)["body"])["loaded"] == 2
    _no_batch_failures(results["write_worker queued write"])
    _no_batch_failures(results["index_sync insert"])
    _no_batch_failures(results["consolidation_worker job"])
    answered = ("recall recall", "recall health", "recall ui_page", "forget forget", "consolidate consolidate",
                "erase namespace", "mcp initialize", "mcp tools/list")  # fmt: skip
    refused = {
        name: f"{json.dumps(results[name])[:600]}\n{deployed.log_tail(name.split()[0])}"
        for name in answered
        if results[name]["statusCode"] != 200
    }
    assert not refused, "\n\n".join(f"{name}:\n{log}" for name, log in refused.items())
    assert "namespaces" in results["forget sweep"]
