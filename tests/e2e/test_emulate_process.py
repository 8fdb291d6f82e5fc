"""`rearview emulate` as a real process, driven only over HTTP and MCP (and, where a test needs to see a queue or the
table as an operator would, over the emulated AWS APIs on moto's endpoint): the stack's template on moto, the real
handlers behind the HTTP API and the event sources, the schedule and DynamoDB's TTL.

Nothing sleeps for a fixed time: each test polls with a deadline, and the emulator's clocks are sped up by its
settings (the schedule's tick, the TTL sweep, the redelivery of a failed message).
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from support.emulator_process import (
    REPO_ROOT,
    Emulation,
    eventually,
    mcp_call,
    request,
    running_emulator,
)
from support.mcp_calls import run
from support.opensearch_node import OpenSearchCluster

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

NAMESPACE = "acme:u-42"
TEMPLATE = REPO_ROOT / "build" / "emulate" / "Rearview.template.json"


@pytest.fixture(scope="module")
def template() -> Path:
    """The stack's template, synthesised by `make emulate-template` (cached in build/emulate/; needs Node.js)."""
    if shutil.which("node") is None or shutil.which("make") is None:
        pytest.skip("synthesising the template needs Node.js and make")
    done = subprocess.run(
        ["make", "-s", "emulate-template"], cwd=REPO_ROOT, capture_output=True, text=True, timeout=600, check=False
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return TEMPLATE


@pytest.fixture(scope="module")
def emulation(template: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Emulation]:
    """One emulator for the module's tests, on the embedded index, with failed messages redelivered after 1 s and
    the TTL swept every second (the schedule keeps its hourly tick: it would consolidate every test's namespace)."""
    root = tmp_path_factory.mktemp("emulate")
    with running_emulator(
        template,
        root / "data",
        root / "logs",
        REARVIEW_EMULATE_RETRY_SECONDS="1",
        REARVIEW_EMULATE_TTL_SWEEP_SECONDS="1",
    ) as emulation:
        yield emulation


def _write(emulation: Emulation, namespace: str, body: dict[str, Any], token: str | None = None) -> dict[str, Any]:
    status, written = request(
        "POST", f"{emulation.url}/v1/namespaces/{namespace}/memories", body, token or emulation.token
    )
    assert status == 202, written
    assert written["status"] == "accepted"
    return written


def _recall(emulation: Emulation, namespace: str, body: dict[str, Any]) -> list[dict[str, Any]]:
    status, found = request("POST", f"{emulation.url}/v1/namespaces/{namespace}/recall", body, emulation.token)
    assert status == 200, found
    return list(found["results"])


def test_a_write_answers_202_and_becomes_readable_over_http_and_mcp(emulation: Emulation) -> None:
    written = _write(
        emulation, NAMESPACE, {"content": "Booked the 9:40 flight to Lisbon; the user wants an aisle seat"}
    )

    hits = eventually(
        lambda: _recall(emulation, NAMESPACE, {"query": "flight to Lisbon"}) or None, "the write never became readable"
    )
    assert hits[0]["id"] == written["id"]
    status, memory = request(
        "GET", f"{emulation.url}/v1/namespaces/{NAMESPACE}/memories/{written['id']}", None, emulation.token
    )
    assert status == 200 and memory["content"].startswith("Booked the 9:40 flight")

    remembered = mcp_call(
        emulation, "remember", {"namespace": NAMESPACE, "content": "The user's dog is called Biscuit"}
    )
    assert remembered["status"] == "accepted"

    def recalled() -> list[dict[str, Any]] | None:
        return (
            mcp_call(
                emulation, "recall", {"namespace": NAMESPACE, "query": "what is the dog called", "format": "json"}
            )["results"]
            or None
        )

    assert eventually(recalled, "the MCP write never became readable")[0]["id"] == remembered["id"]
    # The index caught up through the stream: index_sync ran.
    assert "IndexUpserts" in (emulation.data_dir / "logs" / "index_sync.log").read_text()


def test_a_load_is_stored_by_the_write_function_under_its_role_and_recalled(emulation: Emulation) -> None:
    """The bulk door on the AWS shape: the write function stores the load itself (its role's grant on the table,
    checked by moto), the stream indexes it, and recall finds it; a line without its vector is refused."""
    namespace = "acme:loaded"
    status, health = request("GET", f"{emulation.url}/v1/health", None, emulation.token)
    assert status == 200, health
    vector = [0.0] * health["dim"]
    vector[3] = 1.0
    path = f"{emulation.url}/v1/namespaces/{namespace}/load"
    line = {"id": "loaded-1", "content": "The harbour ferry to Cacilhas leaves every twenty minutes", "vector": vector}

    status, refused = request("POST", path, {"items": [{"content": "No vector here"}]}, emulation.token)
    assert status == 422 and refused["field"] == "items.0.vector", refused
    status, loaded = request("POST", path, {"items": [line]}, emulation.token)
    assert status == 200 and loaded["ids"] == ["loaded-1"], loaded

    hits = eventually(
        lambda: _recall(emulation, namespace, {"query": "ferry to Cacilhas"}) or None, "the load never became readable"
    )
    assert hits[0]["id"] == "loaded-1"


async def _sdk_session(url: str, token: str, mode: str, calls: list[tuple[str, dict[str, Any]]]) -> list[Any]:
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared._httpx_utils import create_mcp_http_client

    http = create_mcp_http_client(headers={"Authorization": f"Bearer {token}"})
    async with http, Client(streamable_http_client(url, http_client=http), mode=mode) as client:
        tools = await client.list_tools()
        return [tools, *[await client.call_tool(name, args) for name, args in calls]]


@pytest.mark.parametrize("mode", ["auto", "legacy"])
def test_the_mcp_sdk_client_works_through_the_emulated_gateway(emulation: Emulation, mode: str) -> None:
    """The SDK's own client (its handshake, its headers, what it does with the stateless function's answers)
    against `/mcp` behind the emulated HTTP API, as an agent would connect to the deployed stack."""
    namespace = f"acme:sdk-{mode}"
    status, created = request(
        "POST", f"{emulation.url}/v1/keys", {"namespace": namespace, "permissions": ["read", "write"]}, emulation.token
    )
    assert status == 201, created
    remember = ("remember", {"namespace": namespace, "content": f"The {mode} client prefers metric units"})
    tools, remembered, refused = run(_sdk_session(
        f"{emulation.url}/mcp", created["key"], mode, [remember, ("recall", {"namespace": "globex", "query": "x"})]
    ))  # fmt: skip

    assert {"remember", "recall", "forget"} <= {t.name for t in tools.tools}
    assert not remembered.is_error and remembered.structured_content["status"] == "accepted"
    assert refused.is_error and "globex" in refused.content[0].text

    def recalled() -> Any:
        _, found = run(_sdk_session(
            f"{emulation.url}/mcp",
            created["key"],
            mode,
            [("recall", {"namespace": namespace, "query": "units", "format": "json"})],
        ))  # fmt: skip
        hits = found.structured_content["results"]
        return hits or None

    assert eventually(recalled, "the SDK's write never became readable")[0]["id"] == remembered.structured_content["id"]


def test_the_gateway_and_the_functions_check_every_request(emulation: Emulation) -> None:
    url = f"{emulation.url}/v1/namespaces/{NAMESPACE}"
    assert request("GET", f"{emulation.url}/v1/health")[0] == 200
    # API Gateway's own answers: no identity 401, the authorizer's no 403, no route 404.
    assert request("POST", f"{url}/recall", {"query": "x"}) == (401, {"message": "Unauthorized"})
    assert request("POST", f"{url}/recall", {"query": "x"}, "rv_0123456789abcdef_wrong") == (
        403,
        {"message": "Forbidden"},
    )
    assert request("GET", f"{emulation.url}/v1/nowhere", None, emulation.token) == (404, {"message": "Not Found"})

    status, created = request(
        "POST", f"{emulation.url}/v1/keys", {"namespace": NAMESPACE, "permissions": ["read"]}, emulation.token
    )
    assert status == 201, created
    reader = created["key"]
    # The function's own checks, behind the authorizer: scope and permission.
    assert request("POST", f"{url}/recall", {"query": "x"}, reader)[0] == 200
    status, body = request("POST", f"{url}/memories", {"content": "A write the key may not make"}, reader)
    assert status == 403 and body["error"] == "forbidden", body
    status, body = request("POST", f"{emulation.url}/v1/namespaces/globex/recall", {"query": "x"}, reader)
    assert status == 403 and body["error"] == "forbidden", body
    status, body = request("POST", f"{url}/forget", {"tags": ["any"]}, reader)
    assert status == 403 and body["error"] == "forbidden", body
    status, body = request(
        "POST", f"{emulation.url}/v1/keys", {"namespace": NAMESPACE, "permissions": ["admin"]}, reader
    )
    assert status == 403 and body["error"] == "forbidden", body
    # Bad input is the function's 4xx naming the field, through the gateway.
    status, body = request("POST", f"{url}/recall", {"query": "x", "top_k": 100000}, emulation.token)
    assert status in (400, 422) and "top_k" in json.dumps(body), body
    # /mcp is behind the gateway's authorizer too (rearview:mcpGatewayAuthorizer, on by default): a flood without a
    # key never starts the MCP function, and the gateway answers its own 401.
    status, _, answer = emulation.raw("POST", "/mcp", {"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
    assert status == 401, answer


def test_erasing_a_subtree_takes_its_memories_and_index_and_revokes_its_keys(emulation: Emulation) -> None:
    """The erase runs in its own function, whose role (held to it by the emulated IAM) reaches the namespace's items,
    the index and the API keys; a key whose whole scope went is revoked."""
    root, child = "erase-me", "erase-me:u-1"
    status, created = request(
        "POST", f"{emulation.url}/v1/keys", {"namespace": root, "permissions": ["read", "write"]}, emulation.token
    )
    assert status == 201, created
    _write(emulation, child, {"content": "Booked the night train to Vienna", "id": "ep-vienna"}, created["key"])
    eventually(lambda: _recall(emulation, child, {"query": "night train to Vienna"}) or None, "the write is found")

    status, receipt = request("DELETE", f"{emulation.url}/v1/namespaces/{root}?subtree=true", None, emulation.token)

    assert status == 200, receipt
    assert receipt["namespaces"][child]["episodic"] == 1 and receipt["keys_revoked"] == [created["key_id"]]
    assert receipt["queued_writes_dropped_until"] and receipt["not_reached"]
    assert _recall(emulation, child, {"query": "night train to Vienna"}) == []
    status, keys = request("GET", f"{emulation.url}/v1/keys", None, emulation.token)
    (revoked,) = [k for k in keys["keys"] if k["key_id"] == created["key_id"]]
    assert revoked["revoked_at"] is not None


def test_the_same_erase_with_the_forget_functions_role_is_refused(template: Path, tmp_path: Path) -> None:
    """What the emulated IAM catches (issue 36, finding 2): the erase used to run in `forget`, whose role reaches
    neither the API keys nor the index, and moto alone answered 200 while on AWS the data went, then a 500, and the
    keys stayed valid. Here the erase function is given forget's role: the emulator refuses it as AWS would."""
    document = json.loads(template.read_text())
    functions = {
        name: resource
        for name, resource in document["Resources"].items()
        if resource["Type"] == "AWS::Lambda::Function"
    }
    (erase,) = [f for name, f in functions.items() if name.startswith("FunctionsErase")]
    (forget,) = [f for name, f in functions.items() if name.startswith("FunctionsForget")]
    erase["Properties"]["Role"] = forget["Properties"]["Role"]
    # Beside the template, with its assets' manifest: the assets' paths are relative to it.
    swapped = template.with_name("Rearview.erase-as-forget.template.json")
    swapped.write_text(json.dumps(document))
    assets = template.with_name("Rearview.assets.json")
    swapped.with_name("Rearview.erase-as-forget.assets.json").write_text(assets.read_text())
    with running_emulator(swapped, tmp_path / "data", tmp_path / "logs") as emulation:
        status, created = request(
            "POST", f"{emulation.url}/v1/keys", {"namespace": "erase-me", "permissions": ["read"]}, emulation.token
        )
        assert status == 201, created
        _write(emulation, "erase-me:u-1", {"content": "Booked the night train to Vienna", "id": "ep-vienna"})
        eventually(lambda: _recall(emulation, "erase-me:u-1", {"query": "night train"}) or None, "the write is found")

        status, answer = request(
            "DELETE", f"{emulation.url}/v1/namespaces/erase-me?subtree=true", None, emulation.token
        )

        assert status == 500, answer
        erase_log = (tmp_path / "data" / "logs" / "erase.log").read_text(errors="replace")
        assert "AccessDenied" in erase_log, "refused by the role's policies, not by a fault"
        status, keys = request("GET", f"{emulation.url}/v1/keys", None, emulation.token)
        (kept,) = [k for k in keys["keys"] if k["key_id"] == created["key_id"]]
        assert kept["revoked_at"] is None, "the keys stay valid: what finding 2 saw on AWS"


def test_a_poison_message_goes_to_the_dead_letter_queue_with_its_reason(emulation: Emulation) -> None:
    sqs = emulation.aws("sqs")
    sqs.send_message(QueueUrl=emulation.outputs["WriteQueueUrl"], MessageBody="{not a queued write")

    def dead_letter() -> dict[str, Any] | None:
        got = sqs.receive_message(
            QueueUrl=emulation.outputs["WriteDeadLetterQueueUrl"], MessageAttributeNames=["All"], WaitTimeSeconds=1
        )
        for message in got.get("Messages", []):
            if message["Body"] == "{not a queued write":
                return message
        return None

    message = eventually(dead_letter, "the poison message never reached the DLQ")
    assert message["MessageAttributes"]["reason"]["StringValue"] == "poison"
    assert message["MessageAttributes"]["error"]["StringValue"] != "-"


def test_working_memory_expires_by_the_ttl_and_ends_its_session(emulation: Emulation) -> None:
    namespace = "acme:ttl"
    _write(
        emulation, namespace, {"content": "Asked for the quarterly numbers of the Lisbon office", "session_id": "s-ttl"}
    )
    status, _ = request(
        "PUT",
        f"{emulation.url}/v1/namespaces/{namespace}/sessions/s-ttl/working/plan",
        {"value": {"step": 1}, "ttl_seconds": 1},
        emulation.token,
    )
    assert status == 200
    table = emulation.outputs["TableName"]
    dynamodb = emulation.aws("dynamodb")

    def working_items() -> list[dict[str, Any]]:
        found = dynamodb.scan(
            TableName=table, FilterExpression="begins_with(sk, :wm)", ExpressionAttributeValues={":wm": {"S": "WM#"}}
        )
        return list(found["Items"])

    assert working_items(), "the working memory item was written"
    eventually(lambda: True if not working_items() else None, "the TTL sweeper never deleted the expired item")

    def session_end_run() -> dict[str, Any] | None:
        status, stats = request("GET", f"{emulation.url}/v1/namespaces/{namespace}/stats", None, emulation.token)
        assert status == 200, stats
        return stats if stats["hindsight"]["last_run_reason"] == "session_end" else None

    # DynamoDB's TTL delete reached index_sync as the service's own delete: a session-end job, then a run.
    eventually(session_end_run, "the TTL-ended session was never consolidated")


def test_a_failure_streak_becomes_a_lesson_through_the_queue_and_forgetting_cascades(emulation: Emulation) -> None:
    namespace = "acme:geo"
    api = f"{emulation.url}/v1/namespaces/{namespace}"
    for size in (300, 200, 150):
        _write(emulation, namespace, {
            "content": f"Called the geocoding API with a batch of {size} addresses", "event_type": "tool_call",
            "entities": ["geocoding API"], "outcome": "HTTP 413 Payload Too Large", "tags": ["geo"],
        })  # fmt: skip

    def lesson() -> dict[str, Any] | None:
        found = _recall(emulation, namespace, {"query": "geocoding API batch", "kinds": ["lesson"]})
        return found[0] if found else None

    learnt = eventually(lesson, "no lesson was learnt from three failures")
    assert "413" in learnt["content"]
    status, stats = request("GET", f"{api}/stats", None, emulation.token)
    assert stats["hindsight"]["last_run_reason"] == "failure_streak"
    assert "consolidation job ran" in (emulation.data_dir / "logs" / "consolidation_worker.log").read_text()

    status, forgotten = request("POST", f"{api}/forget", {"tags": ["geo"]}, emulation.token)
    assert status == 200, forgotten
    assert forgotten["deleted"]["episodic"] == 3
    # Nothing of a forgotten episode survives: the lesson induced from them went with them.
    status, body = request("GET", f"{api}/memories/{learnt['id']}", None, emulation.token)
    assert status == 404, body
    eventually(lambda: True if lesson() is None else None, "the lesson was still recalled after its episodes went")


def test_scheduled_consolidation_runs_by_the_schedule(template: Path, tmp_path: Path) -> None:
    with running_emulator(
        template, tmp_path / "data", tmp_path / "logs", REARVIEW_EMULATE_SCHEDULE_SECONDS="1"
    ) as emulation:
        namespace = "acme:schedule"
        for text in ("Please answer in Chinese from now on.", "Can you reply in Chinese?"):
            _write(emulation, namespace, {"content": text, "session_id": f"chat-{len(text)}"})

        def scheduled_run() -> dict[str, Any] | None:
            status, stats = request("GET", f"{emulation.url}/v1/namespaces/{namespace}/stats", None, emulation.token)
            assert status == 200, stats
            hindsight = stats["hindsight"]
            return (
                hindsight if hindsight["last_run_reason"] == "schedule" and hindsight["unconsolidated"] == 0 else None
            )

        ran = eventually(scheduled_run, "the schedule never consolidated the namespace")
        assert ran["runs"] >= 1
        assert "Enqueued" in (emulation.data_dir / "logs" / "consolidate.log").read_text()

        # The forget function's sweep, on its own rule and under its role, forgets a memory whose expiry came: it
        # finds it by the `expiring` index (the TTL would wait a day more, and skip the cascade).
        expiring = _write(emulation, namespace, {"content": "Door code of lab 4 is 4411", "ttl_seconds": 1})
        dynamodb, table = emulation.aws("dynamodb"), emulation.outputs["TableName"]

        def stored() -> bool:
            key = {"pk": {"S": f"NS#{namespace}"}, "sk": {"S": f"EP#{expiring['id']}"}}
            return "Item" in dynamodb.get_item(TableName=table, Key=key)

        eventually(lambda: True if stored() else None, "the expiring write was never stored")
        eventually(lambda: True if not stored() else None, "the sweep never forgot the expired memory")
        assert "AccessDenied" not in (emulation.data_dir / "logs" / "forget.log").read_text(errors="replace")


def test_state_survives_a_restart_and_sigterm_stops_cleanly(template: Path, tmp_path: Path) -> None:
    data, logs = tmp_path / "data", tmp_path / "logs"
    with running_emulator(template, data, logs) as emulation:
        written = _write(emulation, NAMESPACE, {"content": "Alice moved to Lisbon to lead the harbour restoration"})
        eventually(lambda: _recall(emulation, NAMESPACE, {"query": "Alice harbour"}) or None, "the write never landed")
        emulation.aws("sqs").send_message(QueueUrl=emulation.outputs["WriteDeadLetterQueueUrl"], MessageBody="kept")
        assert emulation.stop() == 0
    err = emulation.stderr()
    assert "Traceback" not in err
    assert "saved" in err and "items" in err

    with running_emulator(template, data, logs) as again:
        assert "restored" in again.stdout() and "restored 0 items" not in again.stdout()
        hits = _recall(again, NAMESPACE, {"query": "Alice harbour"})
        assert hits and hits[0]["id"] == written["id"]
        got = again.aws("sqs").receive_message(QueueUrl=again.outputs["WriteDeadLetterQueueUrl"], WaitTimeSeconds=1)
        assert [m["Body"] for m in got.get("Messages", [])] == ["kept"]


def test_search_runs_on_a_real_opensearch_node(
    template: Path, tmp_path: Path, opensearch_cluster: OpenSearchCluster
) -> None:
    if opensearch_cluster.signed_as is not None:
        pytest.skip("the emulator talks to an unsigned local node")
    with running_emulator(
        template, tmp_path / "data", tmp_path / "logs",
        OPENSEARCH_URL=opensearch_cluster.url, OPENSEARCH_ENGINE=opensearch_cluster.engine,
        REARVIEW_EMULATE_SEARCH="opensearch",
    ) as emulation:  # fmt: skip
        assert "search: OpenSearch" in emulation.stdout()
        namespace = "acme:os"
        written = _write(emulation, namespace, {"content": "The staging database runs on port 5433"})
        hits = eventually(lambda: _recall(emulation, namespace, {"query": "staging database port"}) or None, "no hit")
        assert hits[0]["id"] == written["id"]
        # The index itself holds it (not only the store's read-your-writes window).
        probe = json.dumps({"query": {"term": {"namespace": namespace}}}).encode()
        index = _template_variable(template, "REARVIEW_AWS__OPENSEARCH_INDEX")

        def indexed() -> int | None:
            req = urllib.request.Request(
                f"{opensearch_cluster.url}/{index}/_count", data=probe, headers={"Content-Type": "application/json"}
            )
            with urllib.request.urlopen(req, timeout=10) as response:
                return int(json.load(response).get("count", 0)) or None

        assert eventually(indexed, "the document never reached OpenSearch") >= 1


def _template_variable(template: Path, name: str) -> str:
    """A variable the template gives the functions (the same for all of them)."""
    for resource in json.loads(template.read_text())["Resources"].values():
        if resource["Type"] == "AWS::Lambda::Function":
            return str(resource["Properties"]["Environment"]["Variables"][name])
    raise AssertionError(f"no function has {name}")


def test_a_port_in_use_or_a_missing_opensearch_fails_the_start_in_one_line(template: Path, tmp_path: Path) -> None:
    """Nothing half-started is left behind and nothing is saved: the error, and exit code 2."""
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        taken = _emulate(template, tmp_path / "a", "--port", str(port))
    no_search = _emulate(template, tmp_path / "b", "--port", "0", env={"REARVIEW_EMULATE_SEARCH": "opensearch"})

    assert (taken.returncode, taken.stderr.strip()) == (2, "error: cannot start: [Errno 98] Address already in use")
    assert no_search.returncode == 2 and no_search.stderr.strip() == "error: search: opensearch needs OPENSEARCH_URL"
    assert not (tmp_path / "a" / "state").exists() and not (tmp_path / "b" / "state").exists()


def _emulate(
    template: Path, data_dir: Path, *args: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("REARVIEW_", "OPENSEARCH_"))}
    command = [sys.executable, "-m", "rearview.cli", "emulate", "--template", str(template), "--data-dir"]
    return subprocess.run(
        [*command, str(data_dir), *args], capture_output=True, text=True, timeout=120, env=clean | (env or {}),
        cwd=REPO_ROOT, check=False,
    )  # fmt: skip
