"""The command line says what it talks to and keeps its output readable, through CliRunner: every local command
names its store (and a read never creates one), import works at --url and restores an export, ids are summarised
(--verbose lists them), tables keep a memory's text readable at 80 columns, and an error says how to fix it."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console, RenderableType
from typer.testing import CliRunner, Result

from rearview.api.local_server import LocalServer
from rearview.bootstrap import Services, build
from rearview.cli import app
from rearview.cli.render import IDS_SHOWN, consolidate_result
from rearview.domain.consolidate import ConsolidateResult, ConsolidationDecision
from rearview.settings import Settings

pytestmark = pytest.mark.integration

NS = "acme:u-1"
SENTENCE = "Booked the 9:40 flight to Lisbon with an aisle seat for the quarterly review in March"
# How much of a memory's text one line holds at 80 columns, at the least: a sentence a person reads at a glance.
READABLE = 55


def rendered(renderable: RenderableType, width: int) -> str:
    console = Console(width=width, record=True, file=open("/dev/null", "w"))  # noqa: SIM115 - closed with the console
    console.print(renderable)
    return console.export_text()


def runner_for(data_dir: Path, columns: int = 240) -> Any:
    env = {"REARVIEW_DATA_DIR": str(data_dir), "REARVIEW_EMBEDDER": "hashing", "COLUMNS": str(columns)}

    def run(*args: str, input: str | None = None) -> Result:
        return CliRunner().invoke(app, list(args), env=env, input=input)

    return run


@pytest.fixture
def cli(tmp_path: Path) -> Any:
    return runner_for(tmp_path / "data")


@pytest.fixture
def server(tmp_path: Path) -> Iterator[tuple[LocalServer, Services]]:
    services = build(Settings(data_dir=tmp_path / "server", embedder="hashing"))
    with LocalServer(services.settings, services, host="127.0.0.1", port=0) as running:
        yield running, services
    services.close()


# --- the store ------------------------------------------------------------------------------------------------


def test_a_local_command_names_its_store_and_a_read_never_creates_one(cli: Any, tmp_path: Path) -> None:
    data = tmp_path / "data"
    read = cli("recall", NS, "Lisbon")
    assert read.exit_code == 2 and not data.exists()
    assert f"no Rearview store at {data}" in read.stderr and "--data-dir" in read.stderr and "--url" in read.stderr

    first = cli("remember", NS, SENTENCE)
    assert first.exit_code == 0, first.output
    assert f"store: created a new, empty store at {data} (REARVIEW_DATA_DIR)" in first.stderr
    again = cli("recall", NS, "Lisbon flight")
    assert again.exit_code == 0
    assert again.stderr.splitlines()[0] == f"store: {data} (REARVIEW_DATA_DIR)" and "created" not in again.stderr


def test_a_relative_data_dir_is_made_absolute(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(
        app, ["remember", NS, SENTENCE, "--data-dir", "here"], env={"REARVIEW_EMBEDDER": "hashing"}
    )
    assert result.exit_code == 0, result.output
    assert f"at {tmp_path.resolve() / 'here'} (--data-dir)" in result.stderr


# --- import at --url, and --restore -------------------------------------------------------------------------


def test_import_goes_to_the_server_at_url(cli: Any, tmp_path: Path, server: tuple[LocalServer, Services]) -> None:
    running, services = server
    file = tmp_path / "episodes.jsonl"
    lines = [
        json.dumps({"content": SENTENCE, "id": "ep-1"}),
        '{"content": "broken',
        json.dumps({"text": "Dana sent the slides for the Porto workshop"}),
    ]
    file.write_text("\n".join(lines) + "\n")
    result = cli("--url", running.url, "import", NS, str(file))
    assert result.exit_code == 1, result.output
    assert "stored 2" in result.stdout and "invalid 1" in result.stdout and "line 2:" in result.stderr
    assert f"server: {running.url}" in result.stderr
    assert services.store.get(NS, "ep-1") is not None
    assert not (tmp_path / "data").exists(), "nothing was written locally"


def test_an_export_restores_locally_and_at_url(cli: Any, tmp_path: Path, server: tuple[LocalServer, Services]) -> None:
    running, services = server
    for n in range(7):
        assert cli("remember", NS, f"{SENTENCE}, trip {n}", "--id", f"trip-{n}").exit_code == 0
    assert cli("edit", NS, "trip-3", "--content", "Trip 3 was cancelled").exit_code == 0
    export = tmp_path / "acme.ndjson"
    assert cli("export", NS, "-o", str(export)).exit_code == 0
    assert "import --restore" in cli("export", "--help").stdout

    restored = cli("--url", running.url, "import", NS, str(export), "--restore")
    assert restored.exit_code == 0, restored.output
    assert "restored 7, already stored 0, invalid 0" in restored.stdout
    back = services.store.get(NS, "trip-3")
    assert back is not None and back.content == "Trip 3 was cancelled" and back.version == 2
    assert len(services.store.history(NS, "trip-3")) == 1

    again = cli("--url", running.url, "import", NS, str(export), "--restore", "--verbose")
    assert "restored 0, already stored 7" in again.stdout

    elsewhere = runner_for(tmp_path / "copy")
    copied = elsewhere("import", "acme:u-2", str(export), "--restore", "--verbose")
    assert copied.exit_code == 0, copied.output
    assert "restored 7" in copied.stdout and "trip-0" in copied.stdout
    assert json.loads(elsewhere("ls", "acme:u-2", "--json").stdout)["items"][0]["namespace"] == "acme:u-2"


# --- summaries ------------------------------------------------------------------------------------------------


def test_forget_summarises_many_ids_and_verbose_lists_them(cli: Any) -> None:
    ids = [f"walk-{n}" for n in range(IDS_SHOWN + 7)]
    for memory_id in ids:
        assert cli("remember", NS, f"Walked the dog along the river, walk {memory_id}", "--id", memory_id,
                   "--tag", "walks").exit_code == 0  # fmt: skip
    summary = cli("forget", NS, "--tag", "walks", "--yes")
    assert summary.exit_code == 0, summary.output
    assert f"Forgot {len(ids)} in {NS}: {len(ids)} episodic" in summary.stdout
    assert f"ids: {len(ids)} (--verbose lists them)" in summary.stdout and "walk-3" not in summary.stdout

    for memory_id in ids:
        assert cli("remember", NS, f"Walked the dog again, walk {memory_id}", "--id", memory_id,
                   "--tag", "walks").exit_code == 0  # fmt: skip
    listed = cli("forget", NS, "--tag", "walks", "--yes", "--verbose")
    assert all(memory_id in listed.stdout for memory_id in ids)


def test_a_consolidation_counts_each_memory_once() -> None:
    confirmed = [ConsolidationDecision(memory_id="lesson-1", action="confirmed", kind="lesson") for _ in range(40)]
    result = ConsolidateResult(
        namespace=NS,
        episodes_considered=90,
        new_episodes=40,
        clusters=41,
        facts_created=1,
        facts_confirmed=40,
        episodes_consolidated=40,
        induced={"preference": 1, "fact": 0, "lesson": 0},
        fact_ids=["pref-1"] + ["lesson-1"] * 40,
        decisions=[ConsolidationDecision(memory_id="pref-1", action="created", kind="preference"), *confirmed],
    )
    text = rendered(consolidate_result(result), 100)
    assert "1 new (1 preference), 1 confirmed (40 times), 0 superseded" in text
    assert text.count("lesson-1") == 1 and "90 considered, 40 new" in text


# --- 80 columns -----------------------------------------------------------------------------------------------


def test_tables_keep_a_memorys_text_readable_at_80_columns(tmp_path: Path) -> None:
    narrow = runner_for(tmp_path / "data", columns=80)
    assert narrow("remember", NS, SENTENCE, "--id", "ep-lisbon").exit_code == 0
    assert narrow("remember", NS, "Please reply in Portuguese from now on", "--layer", "semantic",
                  "--kind", "preference").exit_code == 0  # fmt: skip
    commands = {
        ("recall", NS, "Lisbon flight aisle seat"): SENTENCE,
        ("ls", NS): SENTENCE,
        ("brief", NS, "write a reply in Portuguese to the Lisbon office"): "Please reply in Portuguese from now on",
    }
    for args, text in commands.items():
        out = narrow(*args)
        assert out.exit_code == 0, out.output
        lines = out.stdout.splitlines()
        assert max(len(line) for line in lines) <= 80, out.stdout
        assert any(text[:READABLE] in line for line in lines), out.stdout
    recall = narrow("recall", NS, "Lisbon flight aisle seat").stdout
    assert "ep-lisbon" in recall  # the id stays, on the line under the text


# --- errors that say how to fix them ----------------------------------------------------------------------------


def test_url_errors_suggest_the_fix(cli: Any, tmp_path: Path) -> None:
    services = build(Settings(data_dir=tmp_path / "keyed", embedder="hashing"))
    key = services.access.create_key("acme:u-9", ["read"])[1]
    with LocalServer(services.settings, services, host="127.0.0.1", port=0) as running:
        url = running.url
        keyless = cli("--url", running.url, "stats", NS)
        wrong = cli("--url", running.url, "--token", key[:-2] + "xx", "stats", NS)
        elsewhere = cli("--url", running.url, "--token", key, "stats", NS)
    services.close()
    assert keyless.exit_code == 2 and "--token" in keyless.stderr and "REARVIEW_TOKEN" in keyless.stderr
    assert wrong.exit_code == 2 and "was refused" in wrong.stderr
    assert elsewhere.exit_code == 2 and "use a key whose namespace covers it" in elsewhere.stderr
    unreachable = cli("--url", url, "stats", NS)
    assert unreachable.exit_code == 2 and "is `rearview serve` running there?" in unreachable.stderr
    reindex = cli("--url", url, "reindex")
    assert reindex.exit_code == 2 and "drop --url" in reindex.stderr
