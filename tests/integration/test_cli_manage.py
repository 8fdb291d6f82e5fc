"""`rearview ls`, `edit`, `history`, `export` and `erase` through CliRunner: on the local data directory, and with
--url against a LocalServer (whose export streams a namespace longer than one page)."""

from __future__ import annotations

import json
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner, Result

from rearview.api.local_server import LocalServer
from rearview.bootstrap import Services, build
from rearview.cli import app
from rearview.domain.write import MemoryWrite
from rearview.service.manage import transfer
from rearview.settings import Settings

pytestmark = pytest.mark.integration

NS = "acme:u-1"


@pytest.fixture
def cli(tmp_path: Path) -> Any:
    env = {"REARVIEW_DATA_DIR": str(tmp_path / "data"), "REARVIEW_EMBEDDER": "hashing", "COLUMNS": "240"}
    runner = CliRunner()

    def run(*args: str, input: str | None = None) -> Result:
        return runner.invoke(app, list(args), env=env, input=input)

    return run


def _remember(cli: Any, *args: str) -> str:
    result = cli("remember", NS, *args, "--json")
    assert result.exit_code == 0, result.output
    return str(json.loads(result.stdout)["id"])


def test_ls_edit_history_export_and_erase_locally(cli: Any, tmp_path: Path) -> None:
    fact = _remember(cli, "The user prefers window seats on long flights", "--layer", "semantic", "--dimension", "seat")
    booked = _remember(cli, "Booked the 9:40 flight to Lisbon", "--tag", "travel")

    listed = cli("ls", NS, "--limit", "1")
    assert (
        listed.exit_code == 0 and "Booked the 9:40 flight" in listed.stdout and "next page: --cursor" in listed.stdout
    )
    page = json.loads(cli("ls", NS, "--layer", "semantic", "--json").stdout)
    assert [m["id"] for m in page["items"]] == [fact]

    edited = cli("edit", NS, fact, "--content", "The user prefers aisle seats on long flights", "--if-version", "1")
    assert edited.exit_code == 0 and "aisle seats" in edited.stdout
    stale = cli("edit", NS, fact, "--importance", "0.9", "--if-version", "1")
    assert stale.exit_code == 2 and "at version 2, not 1" in stale.output
    wrong = cli("edit", NS, booked, "--confidence", "0.5")  # an episode has no confidence
    assert wrong.exit_code == 2 and "confidence" in wrong.output

    history = json.loads(cli("history", NS, fact, "--json").stdout)
    assert [(v["version"], v["changed_by"]) for v in history["versions"]] == [(1, "write"), (2, "edit")]

    out = tmp_path / "acme.ndjson"
    exported = cli("export", NS, "-o", str(out))
    assert exported.exit_code == 0, exported.output
    lines = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(lines) == 2 and {line["id"] for line in lines} >= {fact}

    refused = cli("erase", NS, input="n\n")
    assert refused.exit_code != 0 and json.loads(cli("ls", NS, "--json").stdout)["items"]
    erased = cli("erase", NS, "--yes", "--json")
    assert erased.exit_code == 0 and json.loads(erased.stdout)["namespaces"][NS]["episodic"] == 1
    assert json.loads(cli("ls", NS, "--json").stdout)["items"] == []


@pytest.fixture
def server(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[LocalServer, Services]]:
    # Small export pages, so that the server's stream follows its own cursor across several of them.
    monkeypatch.setattr(transfer, "EXPORT_PAGE_ITEMS", 3)
    services = build(Settings(data_dir=tmp_path / "server", embedder="hashing"))
    with LocalServer(services.settings, services, host="127.0.0.1", port=0) as running:
        yield running, services
    services.close()


def test_the_same_commands_go_over_http(cli: Any, server: tuple[LocalServer, Services]) -> None:
    running, services = server
    for i in range(8):
        services.writer.write(NS, MemoryWrite(content=f"Client visit number {i} at the Lisbon office, ref {i * 911}"))
    url = ["--url", running.url]

    page = json.loads(cli(*url, "ls", NS, "--limit", "5", "--json").stdout)
    assert len(page["items"]) == 5 and page["next_cursor"]
    rest = json.loads(cli(*url, "ls", NS, "--limit", "5", "--cursor", page["next_cursor"], "--json").stdout)
    assert len(rest["items"]) == 3 and rest["next_cursor"] is None

    target = page["items"][0]["id"]
    edited = cli(*url, "edit", NS, target, "--tag", "client", "--if-version", "1", "--json")
    assert edited.exit_code == 0 and json.loads(edited.stdout)["tags"] == ["client"]
    assert cli(*url, "edit", NS, target, "--tag", "x", "--if-version", "1").exit_code == 2
    history = json.loads(cli(*url, "history", NS, target, "--json").stdout)
    assert history["versions"][-1]["actor"] == "open-local"

    exported = cli(*url, "export", NS)
    ids = [json.loads(line)["id"] for line in exported.stdout.splitlines()]
    assert len(ids) == 8 == len(set(ids))
    # The server streamed the three pages as one body: no cursor left for the client to follow.
    with urllib.request.urlopen(f"{running.url}/v1/namespaces/{NS}/export", timeout=30) as response:
        assert response.headers.get("X-Next-Cursor") is None
        assert len(response.read().splitlines()) == 8

    erased = cli(*url, "erase", NS, "--subtree", "--yes", "--json")
    assert json.loads(erased.stdout)["namespaces"][NS]["episodic"] == 8
