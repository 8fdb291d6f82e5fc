"""`rearview keys` on the data directory, the CLI against a remote server (`--url`/`--token`), the admin routes,
and the local server's open mode: open on loopback with no keys (and saying so), closed by the first key."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner, Result

from rearview.api.local_server import OPEN_MODE_BANNER, LocalServer, check_bind
from rearview.bootstrap import Services, build
from rearview.cli import app
from rearview.clock import ManualClock
from rearview.errors import ConfigurationError
from rearview.service.access import split_key
from rearview.settings import Settings

pytestmark = pytest.mark.integration

NS = "acme:u-42"


def cli(data_dir: Path, *args: str, env: dict[str, str] | None = None) -> Result:
    base = {"REARVIEW_DATA_DIR": str(data_dir), "REARVIEW_EMBEDDER": "hashing", "REARVIEW_HASHING_DIM": "512"}
    return CliRunner().invoke(app, list(args), env={**base, **(env or {})})


def http(url: str, method: str, path: str, body: Any = None, token: str | None = None) -> tuple[int, Any]:
    headers = {"Content-Type": "application/json"}
    if token:
        headers["Authorization"] = f"Bearer {token}"
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(url + path, data=data, method=method, headers=headers)
    try:
        with urllib.request.urlopen(req, timeout=30) as resp:
            return resp.status, json.loads(resp.read())
    except urllib.error.HTTPError as err:
        with err:
            return err.code, json.loads(err.read())


# --- rearview keys on the data directory -----------------------------------------------------------------------


def test_keys_create_prints_the_key_once_and_list_never_shows_it(tmp_path: Path) -> None:
    created = cli(
        tmp_path,
        "keys",
        "create",
        "--namespace",
        "acme",
        "--permissions",
        "read,write",
        "--expires-in",
        "30d",
        "--description",
        "support agent",
    )
    assert created.exit_code == 0, created.output
    plaintext = created.stdout.strip()
    key_id, secret = split_key(plaintext)
    assert "not shown again" in created.stderr

    listed = cli(tmp_path, "keys", "list", "--json")
    assert listed.exit_code == 0, listed.output
    rows = json.loads(listed.stdout)
    assert [(r["key_id"], r["namespace"], r["permissions"], r["status"]) for r in rows] == [
        (key_id, "acme", ["read", "write"], "active")
    ]
    assert rows[0]["expires_at"] is not None and rows[0]["description"] == "support agent"
    assert secret not in listed.stdout and "sha256" not in listed.stdout
    table = cli(tmp_path, "keys", "list")
    assert key_id in table.stdout and secret not in table.stdout

    revoked = cli(tmp_path, "keys", "revoke", key_id)
    assert revoked.exit_code == 0 and "revoked" in revoked.stdout
    assert json.loads(cli(tmp_path, "keys", "list", "--json").stdout)[0]["status"] == "revoked"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--namespace", "acme", "--permissions", "read,sudo"], "unknown permission"),
        (["--namespace", "not a namespace", "--permissions", "read"], "namespace"),
        (["--namespace", "acme", "--permissions", "read", "--expires-in", "soon"], "expires-in"),
        (["--namespace", "acme", "--permissions", ","], "at least one"),
    ],
)
def test_keys_create_refuses_bad_input(tmp_path: Path, args: list[str], message: str) -> None:
    result = cli(tmp_path, "keys", "create", *args)
    assert result.exit_code == 2
    assert message in result.stderr


def test_keys_revoke_of_an_unknown_key_is_an_error(tmp_path: Path) -> None:
    result = cli(tmp_path, "keys", "revoke", "0123456789abcdef")
    assert result.exit_code == 2 and "no key" in result.stderr


def test_keys_refuses_the_memory_backend_which_would_forget_them(tmp_path: Path) -> None:
    result = cli(tmp_path, "keys", "list", env={"REARVIEW_BACKEND": "memory"})
    assert result.exit_code == 2 and "backend memory" in result.stderr
    assert not tmp_path.joinpath("rearview.db").exists()


def test_keys_commands_do_not_pin_the_embedder(tmp_path: Path) -> None:
    assert cli(tmp_path, "keys", "create", "--namespace", "acme", "--permissions", "read").exit_code == 0
    # The data directory now holds a key but no embedder record: a server with any embedder may open it.
    services = build(Settings(data_dir=tmp_path, embedder="hashing", hashing_dim=64))
    try:
        assert services.access.keys_exist()
    finally:
        services.close()


# --- the server: open mode, closed by keys ---------------------------------------------------------------------


@pytest.fixture
def services(tmp_path: Path, clock: ManualClock) -> Iterator[Services]:
    svc = build(Settings(data_dir=tmp_path / "data", embedder="hashing"), clock=clock)
    yield svc
    svc.close()


def test_open_mode_on_loopback_says_so_refuses_the_first_key_over_http_and_closes_with_one(
    services: Services, capsys: pytest.CaptureFixture[str]
) -> None:
    with LocalServer(services.settings, services, host="127.0.0.1", port=0) as server:
        server.announce()
        assert OPEN_MODE_BANNER in capsys.readouterr().out
        assert http(server.url, "GET", f"/v1/namespaces/{NS}/stats")[0] == 200
        # The first key cannot come over HTTP, even open: a page of another site could create it and lock the
        # owner out (issue 18). The server stays open ...
        status, refused = http(server.url, "POST", "/v1/keys", {"namespace": "acme", "permissions": ["read"]})
        assert status == 403 and refused["error"] == "forbidden" and not services.access.keys_exist()
        assert http(server.url, "GET", f"/v1/namespaces/{NS}/stats")[0] == 200
        # ... until the first key comes from the CLI, which closes it at once.
        created = cli(services.settings.data_dir, "keys", "create", "--namespace", "acme", "--permissions", "read")
        assert created.exit_code == 0 and created.stdout.strip().startswith("rv_"), created.output
        status, body = http(server.url, "GET", f"/v1/namespaces/{NS}/stats")
        assert status == 401 and body["error"] == "unauthorized"
        assert http(server.url, "GET", f"/v1/namespaces/{NS}/stats", token=created.stdout.strip())[0] == 200
        assert http(server.url, "GET", "/v1/health")[0] == 200
        server.announce()
        assert "auth: enforced" in capsys.readouterr().out


def test_a_key_created_by_the_cli_closes_a_running_open_server(services: Services) -> None:
    with LocalServer(services.settings, services, host="127.0.0.1", port=0) as server:
        assert http(server.url, "GET", f"/v1/namespaces/{NS}/stats")[0] == 200
        result = cli(services.settings.data_dir, "keys", "create", "--namespace", NS, "--permissions", "read")
        assert result.exit_code == 0, result.output
        assert http(server.url, "GET", f"/v1/namespaces/{NS}/stats")[0] == 401
        assert http(server.url, "GET", f"/v1/namespaces/{NS}/stats", token=result.stdout.strip())[0] == 200
        # Revoking the only key does not reopen the server.
        cli(services.settings.data_dir, "keys", "revoke", split_key(result.stdout.strip())[0])
        assert http(server.url, "GET", f"/v1/namespaces/{NS}/stats")[0] == 401


def test_a_server_started_on_a_directory_with_keys_enforces_them(tmp_path: Path) -> None:
    plaintext = cli(tmp_path, "keys", "create", "--namespace", "acme", "--permissions", "read").stdout.strip()
    settings = Settings(data_dir=tmp_path, embedder="hashing")
    with LocalServer(settings, port=0) as server:
        assert not server.gate.is_open
        assert http(server.url, "GET", f"/v1/namespaces/{NS}/stats")[0] == 401
        assert http(server.url, "GET", f"/v1/namespaces/{NS}/stats", token=plaintext)[0] == 200
        assert http(server.url, "GET", "/v1/namespaces/acme2/stats", token=plaintext)[0] == 403


def test_non_loopback_needs_credentials_and_is_never_open(tmp_path: Path) -> None:
    with pytest.raises(ConfigurationError, match="rearview keys create"):
        check_bind("0.0.0.0", None, keys_configured=False)
    check_bind("0.0.0.0", None, keys_configured=True)
    plaintext = cli(tmp_path, "keys", "create", "--namespace", "acme", "--permissions", "read").stdout.strip()
    settings = Settings(data_dir=tmp_path, embedder="hashing", host="0.0.0.0")
    with LocalServer(settings, port=0) as server:
        url = f"http://127.0.0.1:{server.port}"
        assert not server.gate.is_open
        assert http(url, "GET", f"/v1/namespaces/{NS}/stats")[0] == 401
        assert http(url, "GET", f"/v1/namespaces/{NS}/stats", token=plaintext)[0] == 200


def test_the_bootstrap_token_closes_open_mode_and_administers_keys(tmp_path: Path) -> None:
    settings = Settings(data_dir=tmp_path, embedder="hashing", api_token="bootstrap-token-for-tests")
    with LocalServer(settings, port=0) as server:
        assert http(server.url, "GET", f"/v1/namespaces/{NS}/stats")[0] == 401
        status, created = http(
            server.url,
            "POST",
            "/v1/keys",
            {"namespace": "acme", "permissions": ["read", "admin"]},
            token="bootstrap-token-for-tests",
        )
        assert status == 201
        # A key may only create keys within its scope and with at most its own permissions.
        child = {"namespace": "acme:u-42", "permissions": ["read"]}
        assert http(server.url, "POST", "/v1/keys", child, token=created["key"])[0] == 201
        wider = {"namespace": "acme:u-42", "permissions": ["read", "write"]}
        status, body = http(server.url, "POST", "/v1/keys", wider, token=created["key"])
        assert status == 403 and "write" in body["message"]
        outside = {"namespace": "globex", "permissions": ["read"]}
        assert http(server.url, "POST", "/v1/keys", outside, token=created["key"])[0] == 403
        status, listed = http(server.url, "GET", "/v1/keys", token=created["key"])
        assert status == 200 and {k["namespace"] for k in listed["keys"]} == {"acme", "acme:u-42"}
        assert all("key" not in k and "secret_hash" not in k for k in listed["keys"])
        status, revoked = http(server.url, "DELETE", f"/v1/keys/{created['key_id']}", token="bootstrap-token-for-tests")
        assert status == 200 and revoked["status"] == "revoked"
        assert http(server.url, "GET", f"/v1/namespaces/{NS}/stats", token=created["key"])[0] == 401


# --- the CLI against a remote server ----------------------------------------------------------------------------


def test_cli_commands_go_over_http_with_the_bearer_key(tmp_path: Path, services: Services) -> None:
    with LocalServer(services.settings, services, host="127.0.0.1", port=0) as server:
        plaintext = services.access.create_key("acme", ["read", "write", "forget", "consolidate"])[1]
        remote = {"REARVIEW_URL": server.url, "REARVIEW_TOKEN": plaintext}
        # The CLI's own data directory stays empty: everything goes to the server.
        local = tmp_path / "cli-local"

        wrote = cli(local, "remember", NS, "Flew to Porto for the kickoff with Dana", "--json", env=remote)
        assert wrote.exit_code == 0, wrote.output
        assert json.loads(wrote.stdout)["status"] == "stored", wrote.stdout
        memory_id = json.loads(wrote.stdout)["id"]
        assert services.store.get(NS, memory_id) is not None

        recalled = cli(local, "recall", NS, "Porto kickoff", "--json", env=remote)
        assert recalled.exit_code == 0 and json.loads(recalled.stdout)["results"][0]["id"] == memory_id
        stats = cli(local, "stats", NS, "--json", env=remote)
        assert json.loads(stats.stdout)["counts"]["episodic"] == 1
        consolidated = cli(local, "consolidate", NS, "--json", env=remote)
        assert consolidated.exit_code == 0 and json.loads(consolidated.stdout)["namespace"] == NS
        forgot = cli(local, "forget", NS, "--id", memory_id, "--json", env=remote)
        assert forgot.exit_code == 0 and json.loads(forgot.stdout)["deleted"]["episodic"] == 1
        assert services.store.get(NS, memory_id) is None
        assert not local.exists(), "nothing was written locally"

        # Errors from the server read like local ones: 403, 401, 404.
        other = cli(local, "stats", "globex", env=remote)
        assert other.exit_code == 2 and "scope" in other.stderr
        wrong = cli(local, "stats", NS, env={**remote, "REARVIEW_TOKEN": "rv_garbage"})
        assert wrong.exit_code == 2 and "malformed" in wrong.stderr
        gone = cli(local, "forget", NS, "--id", memory_id, env=remote)
        assert gone.exit_code == 2 and "not found" in gone.stderr
        flags = cli(local, "--url", server.url, "--token", plaintext, "stats", NS, "--json")
        assert flags.exit_code == 0 and json.loads(flags.stdout)["namespace"] == NS


def test_hindsight_cli_commands_go_over_http(tmp_path: Path, services: Services, clock: ManualClock) -> None:
    with LocalServer(services.settings, services, host="127.0.0.1", port=0) as server:
        plaintext = services.access.create_key("acme", ["read", "write", "consolidate"])[1]
        remote = {"REARVIEW_URL": server.url, "REARVIEW_TOKEN": plaintext}
        local = tmp_path / "cli-local"
        for size in (300, 200, 150):
            clock.advance(minutes=5)
            wrote = cli(local, "remember", NS, f"Called the geocoding API with a batch of {size} addresses",
                        "--event-type", "tool_call", "--entity", "geocoding API", "--session", "s-3",
                        "--outcome", "HTTP 413 Payload Too Large", env=remote)  # fmt: skip
            assert wrote.exit_code == 0, wrote.output
        assert cli(local, "consolidate", NS, env=remote).exit_code == 0

        briefed = cli(local, "brief", NS, "Geocode the signups", "--tool", "geocoding API", "--json", env=remote)
        assert briefed.exit_code == 0, briefed.output
        lesson = json.loads(briefed.stdout)["items"][0]["memory"]
        judged = cli(local, "feedback", NS, lesson["id"], "useful", "--json", env=remote)
        assert judged.exit_code == 0 and json.loads(judged.stdout)["adopted"] is True
        ended = cli(local, "session", "end", NS, "s-3", "--json", env=remote)
        assert ended.exit_code == 0, ended.output
        # The server in this test has no worker attached: the trigger has nowhere to send its job.
        assert json.loads(ended.stdout) == {"namespace": NS, "session_id": "s-3", "cleared": 0,
                                            "consolidation_job_sent": False}  # fmt: skip
        assert not local.exists(), "nothing was written locally"

        # A run another process holds reads as it does locally; --all runs the server's namespaces with a backlog.
        assert services.ledger.acquire_lease(NS, "another process", services.clock.now(), 600)
        busy = cli(local, "consolidate", NS, env=remote)
        assert busy.exit_code == 2 and "in progress" in busy.stderr
        nothing = cli(local, "consolidate", "--all", env=remote)
        assert nothing.exit_code == 0 and "Nothing to consolidate" in nothing.stdout
        assert cli(local, "remember", NS, "Called the geocoding API again", env=remote).exit_code == 0
        every = cli(local, "consolidate", "--all", env=remote)
        assert every.exit_code == 1 and f"{NS}: failed, consolidation_running" in every.stdout
        assert not local.exists(), "nothing was written locally"


def test_keys_cli_against_a_remote_server(tmp_path: Path, services: Services) -> None:
    with LocalServer(services.settings, services, host="127.0.0.1", port=0) as server:
        admin = services.access.create_key("acme", ["read", "admin"])[1]
        remote = {"REARVIEW_URL": server.url, "REARVIEW_TOKEN": admin}
        created = cli(tmp_path, "keys", "create", "--namespace", NS, "--permissions", "read", env=remote)
        assert created.exit_code == 0, created.output
        key_id = split_key(created.stdout.strip())[0]
        rows = json.loads(cli(tmp_path, "keys", "list", "--json", env=remote).stdout)
        assert key_id in {r["key_id"] for r in rows}
        assert cli(tmp_path, "keys", "revoke", key_id, env=remote).exit_code == 0
        denied = cli(tmp_path, "keys", "create", "--namespace", "globex", "--permissions", "read", env=remote)
        assert denied.exit_code == 2 and "scope" in denied.stderr


def test_unreachable_server_is_a_clean_error(tmp_path: Path) -> None:
    result = cli(tmp_path, "stats", NS, env={"REARVIEW_URL": "http://127.0.0.1:9", "REARVIEW_TOKEN": "x"})
    assert result.exit_code == 2 and "cannot reach" in result.stderr
