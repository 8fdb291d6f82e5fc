"""The `rearview` command line on the real SQLite backend and the hashing embedder, through CliRunner."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner, Result

from rearview.bootstrap import build
from rearview.cli import app
from rearview.settings import Settings

pytestmark = pytest.mark.integration

LISBON = "Alice moved to Lisbon in March to lead the harbour restoration project"
PIANO = "Bob started piano lessons with Marta every Tuesday evening"


@pytest.fixture
def cli(tmp_path: Path) -> Any:
    """Run `rearview <args>` with the data in tmp_path and the hashing embedder, set by the environment."""
    env = {
        "REARVIEW_DATA_DIR": str(tmp_path / "data"),
        "REARVIEW_EMBEDDER": "hashing",
        # Wide enough that table cells (ids, contents) are not folded across lines.
        "COLUMNS": "240",
    }
    runner = CliRunner()

    def run(*args: str, input: str | None = None) -> Result:
        return runner.invoke(app, list(args), env=env, input=input)

    return run


def remember_id(cli: Any, *args: str) -> str:
    result = cli("remember", *args, "--json")
    assert result.exit_code == 0, result.output
    body = json.loads(result.stdout)
    assert body["status"] == "stored", body
    return str(body["id"])


def test_remember_prints_the_write_result(cli: Any) -> None:
    result = cli("remember", "acme:u-1", LISBON, "--tag", "travel", "--entity", "Alice")
    assert result.exit_code == 0, result.output
    assert "stored" in result.stdout
    assert "redacted" in result.stdout


def test_remember_redacts_a_secret_and_says_so(cli: Any) -> None:
    result = cli("remember", "acme:u-1", "Deploy key for the staging box is AKIAIOSFODNN7EXAMPLE", "--json")
    assert result.exit_code == 0, result.output
    body = json.loads(result.stdout)
    assert body["redacted"] is True


def test_recall_finds_what_was_remembered_in_table_and_json(cli: Any) -> None:
    lisbon = remember_id(cli, "acme:u-1", LISBON, "--tag", "travel")
    remember_id(cli, "acme:u-1", PIANO)

    table = cli("recall", "acme:u-1", "Alice Lisbon harbour")
    assert table.exit_code == 0, table.output
    assert lisbon in table.stdout
    assert "Lisbon" in table.stdout
    assert "No relevant memory." not in table.stdout

    as_json = cli("recall", "acme:u-1", "Alice Lisbon harbour", "--json")
    assert as_json.exit_code == 0, as_json.output
    body = json.loads(as_json.stdout)
    assert body["no_relevant_memory"] is False
    assert body["results"][0]["id"] == lisbon
    assert body["results"][0]["content"] == LISBON


def test_recall_filters_by_tag_and_layer(cli: Any) -> None:
    remember_id(cli, "acme:u-1", LISBON, "--tag", "travel")
    fact = remember_id(cli, "acme:u-1", "Alice prefers window seats on long flights", "--layer", "semantic")
    result = cli("recall", "acme:u-1", "Alice", "--layer", "semantic", "--json")
    assert result.exit_code == 0, result.output
    assert [hit["id"] for hit in json.loads(result.stdout)["results"]] == [fact]


def test_recall_explain_prints_every_stage(cli: Any) -> None:
    remember_id(cli, "acme:u-1", LISBON)
    result = cli("recall", "acme:u-1", "Alice Lisbon harbour", "--explain")
    assert result.exit_code == 0, result.output
    body = json.loads(cli("recall", "acme:u-1", "Alice Lisbon harbour", "--explain", "--json").stdout)
    stages = [stage["stage"] for stage in body["trace"]["stages"]]
    assert len(stages) >= 5
    assert "Trace" in result.stdout
    for stage in stages:
        assert stage in result.stdout
    # The candidate tables name the memory found by the keyword and vector stages.
    assert "keyword: top" in result.stdout


def test_recall_excludes_and_reports_the_query_form(cli: Any) -> None:
    remember_id(cli, "acme:u-1", "Retried the flaky upload three times with backoff")
    kept = remember_id(cli, "acme:u-1", "Fixed the flaky upload with a bigger chunk size")

    table = cli(
        "recall", "acme:u-1", "how did we fix the flaky upload?", "--exclude", "retries", "--timeout-ms", "30000"
    )
    assert table.exit_code == 0, table.output
    assert "excluded 'retries' (memories about it): 1 left out" in table.stdout
    body = json.loads(cli("recall", "acme:u-1", "the flaky upload other than retries", "--json").stdout)
    assert [h["id"] for h in body["results"]] == [kept]
    assert body["query_form"]["exclusions"][0]["phrase"] == "retries" and body["timed_out"] is False


def test_recall_says_no_relevant_memory(cli: Any) -> None:
    remember_id(cli, "acme:u-1", LISBON)
    result = cli("recall", "acme:u-1", "quantum chromodynamics lattice gauge theory")
    assert result.exit_code == 0, result.output
    assert "No relevant memory." in result.stdout
    body = json.loads(cli("recall", "acme:u-1", "quantum chromodynamics lattice gauge theory", "--json").stdout)
    assert body["no_relevant_memory"] is True
    assert body["results"] == []


def test_recall_token_budget_truncation_is_shown(cli: Any) -> None:
    for n in range(4):
        remember_id(cli, "acme:u-1", f"Alice visited the Lisbon harbour office on day {n} to review the plans {n}")
    result = cli("recall", "acme:u-1", "Alice Lisbon harbour", "--token-budget", "20")
    assert result.exit_code == 0, result.output
    assert "(truncated to token budget)" in result.stdout


def test_forget_by_id_prints_the_receipt(cli: Any) -> None:
    lisbon = remember_id(cli, "acme:u-1", LISBON)
    piano = remember_id(cli, "acme:u-1", PIANO)

    result = cli("forget", "acme:u-1", "--id", lisbon)
    assert result.exit_code == 0, result.output
    assert "Forgot 1 in acme:u-1" in result.stdout
    assert lisbon in result.stdout

    again = cli("forget", "acme:u-1", "--id", lisbon)
    assert again.exit_code == 2
    assert "not found" in again.stderr

    receipt = json.loads(cli("forget", "acme:u-1", "--id", piano, "--json").stdout)
    assert receipt["deleted"]["episodic"] == 1
    assert receipt["ids"] == [piano]
    stats = json.loads(cli("stats", "acme:u-1", "--json").stdout)
    assert stats["counts"]["episodic"] == 0


def test_forget_by_filter_asks_first(cli: Any) -> None:
    remember_id(cli, "acme:u-1", LISBON, "--tag", "travel")
    remember_id(cli, "acme:u-1", PIANO, "--tag", "music")

    declined = cli("forget", "acme:u-1", "--tag", "travel", input="n\n")
    assert declined.exit_code == 1
    assert "tags=travel" in declined.output
    assert json.loads(cli("stats", "acme:u-1", "--json").stdout)["counts"]["episodic"] == 2

    accepted = cli("forget", "acme:u-1", "--tag", "travel", "--json", input="y\n")
    assert accepted.exit_code == 0, accepted.output
    # The question goes to stderr; CliRunner echoes the typed answer to stdout, before the receipt.
    receipt = accepted.stdout[accepted.stdout.index("{") :]
    assert json.loads(receipt)["deleted"]["episodic"] == 1

    unasked = cli("forget", "acme:u-1", "--tag", "music", "--yes", "--json")
    assert unasked.exit_code == 0, unasked.output
    assert json.loads(unasked.stdout)["deleted"]["episodic"] == 1
    assert json.loads(cli("stats", "acme:u-1", "--json").stdout)["counts"]["episodic"] == 0


def test_forget_without_ids_or_filters_is_a_user_error(cli: Any) -> None:
    result = cli("forget", "acme:u-1")
    assert result.exit_code == 2
    assert result.stderr.startswith("error: ")


def test_stats_counts_layers(cli: Any) -> None:
    remember_id(cli, "acme:u-1", LISBON)
    remember_id(cli, "acme:u-1", PIANO)
    remember_id(cli, "acme:u-1", "Alice prefers window seats on long flights", "--layer", "semantic")
    cli("recall", "acme:u-1", "Alice Lisbon harbour")

    body = json.loads(cli("stats", "acme:u-1", "--json").stdout)
    assert body["counts"]["episodic"] == 2
    assert body["counts"]["semantic"] == 1
    assert body["recall_count"] == 1

    table = cli("stats", "acme:u-1")
    assert table.exit_code == 0, table.output
    assert "Stats of acme:u-1" in table.stdout
    assert "episodic memories" in table.stdout


def test_consolidate_reports_what_it_considered(cli: Any) -> None:
    for text in (
        "Alice ordered an oat milk flat white at the Lisbon cafe",
        "Alice ordered an oat milk flat white again at the harbour cafe",
        "Alice ordered an oat milk flat white before the Lisbon meeting",
        PIANO,
    ):
        remember_id(cli, "acme:u-1", text)

    result = cli("consolidate", "acme:u-1", "--json")
    assert result.exit_code == 0, result.output
    body = json.loads(result.stdout)
    assert body["namespace"] == "acme:u-1"
    assert body["episodes_considered"] == 4
    assert body["facts_created"] == len(body["fact_ids"])

    table = cli("consolidate", "acme:u-1", "--max-clusters", "5")
    assert table.exit_code == 0, table.output
    # The second run finds nothing new to consider, and says so.
    assert "0 considered, 0 new" in table.stdout and "nothing new" in table.stdout


def write_jsonl(path: Path, lines: list[str]) -> Path:
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_import_writes_valid_lines_and_reports_invalid_ones(cli: Any, tmp_path: Path) -> None:
    file = write_jsonl(
        tmp_path / "episodes.jsonl",
        [
            json.dumps({"content": LISBON, "tags": ["travel"], "occurred_at": "2025-03-01T10:00:00Z"}),
            json.dumps(
                {
                    "speaker": "Caroline",
                    "dia_id": "D1:3",
                    "text": "I went to the LGBTQ support group on Sunday",
                    "ts": "2023-05-08T13:56:00Z",
                    "img_url": ["x.jpg"],
                }
            ),
            '{"content": "broken json',
            "",
            json.dumps({"tags": ["no-content"]}),
            json.dumps({"content": "The printer on floor three jams \x07 whenever it prints duplex"}),
            json.dumps({"text": PIANO, "timestamp": "2025-04-01T18:00:00+02:00"}),
            json.dumps({"content": "Alice flies out on Friday", "top_k": 3}),
        ],
    )
    result = cli("import", "acme:u-1", str(file), "--batch-size", "3")
    assert result.exit_code == 1, result.output
    # Invalid lines are named by number and field: bad JSON, missing content, content the service rejects.
    assert "line 3: line: not valid JSON" in result.stderr
    assert "line 5: content: required" in result.stderr
    assert "line 6: content: contains control character" in result.stderr
    assert "stored 4, merged 0, skipped 0, invalid 3" in result.stdout
    assert "ignored unknown keys: img_url (1 lines), top_k (1 lines)" in result.stdout
    assert "invalid lines (not imported): 3, 5, 6" in result.stdout

    stats = json.loads(cli("stats", "acme:u-1", "--json").stdout)
    assert stats["counts"]["episodic"] == 4

    recalled = json.loads(cli("recall", "acme:u-1", "support group", "--json").stdout)
    hit = recalled["results"][0]
    assert hit["id"] == "D1:3"
    assert hit["entities"] == ["Caroline"]
    assert hit["occurred_at"].startswith("2023-05-08T13:56:00")


TURNS = [
    "I finally signed up for pottery classes downtown",
    "My sister Jenna is visiting from Toronto next month",
    "We adopted a grey cat called Pixel from the shelter",
    "Running the Berlin marathon in under four hours is my goal",
    "The bakery on Elm Street makes the best rye bread",
]


def test_import_of_a_clean_file_exits_zero_and_is_idempotent_by_id(cli: Any, tmp_path: Path) -> None:
    file = write_jsonl(
        tmp_path / "turns.jsonl",
        [json.dumps({"speaker": "Mel", "dia_id": f"D2:{n}", "text": text}) for n, text in enumerate(TURNS)],
    )
    first = cli("import", "acme:u-2", str(file))
    assert first.exit_code == 0, first.output
    assert "stored 5, merged 0, skipped 0, invalid 0" in first.stdout

    again = cli("import", "acme:u-2", str(file))
    assert again.exit_code == 0, again.output
    assert "stored 0, merged 0, skipped 0, already stored 5, invalid 0" in again.stdout
    stats = json.loads(cli("stats", "acme:u-2", "--json").stdout)
    assert stats["counts"]["episodic"] == len(TURNS)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("remember", "bad namespace!", "Alice moved to Lisbon"), "error: namespace:"),
        (("recall", "acme", "Lisbon", "--top-k", "1000"), "error: top_k:"),
        (("recall", "acme", "Lisbon", "--since", "last tuesday-ish"), "error: since:"),
        (("remember", "acme", "Alice likes tea", "--confidence", "0.9"), "error: confidence:"),
        (("stats", "a:b:c:d:e"), "error: namespace:"),
    ],
)
def test_user_errors_exit_2_with_a_clean_message(cli: Any, args: tuple[str, ...], message: str) -> None:
    result = cli(*args)
    assert result.exit_code == 2, result.output
    assert result.stderr.startswith(message), result.stderr
    assert "Traceback" not in result.output


def test_a_bad_environment_setting_is_a_user_error(tmp_path: Path) -> None:
    result = CliRunner().invoke(
        app, ["stats", "acme"], env={"REARVIEW_DATA_DIR": str(tmp_path), "REARVIEW_EMBEDDER": "word2vec"}
    )
    assert result.exit_code == 2
    assert result.stderr.startswith("error: embedder:")


def test_options_override_the_environment(cli: Any, tmp_path: Path) -> None:
    other = tmp_path / "other"
    result = cli("remember", "acme", LISBON, "--data-dir", str(other), "--json")
    assert result.exit_code == 0, result.output
    assert (other / "rearview.db").exists()
    # The environment's data directory was neither written nor created: a read there says so.
    untouched = cli("stats", "acme", "--json")
    assert untouched.exit_code == 2 and "no Rearview store at" in untouched.stderr


# --- hindsight: brief, feedback, session end, consolidate --all, stats ------------------------------------------


def geocoding_failures(cli: Any, namespace: str = "acme:u-1", session: str = "s1") -> None:
    for size in (300, 200, 150):
        remember_id(cli, namespace, f"Called the geocoding API with a batch of {size} addresses",
                    "--event-type", "tool_call", "--entity", "geocoding API", "--session", session,
                    "--outcome", "HTTP 413 Payload Too Large")  # fmt: skip


def test_brief_offers_the_lesson_and_feedback_judges_it(cli: Any) -> None:
    geocoding_failures(cli)
    assert cli("consolidate", "acme:u-1").exit_code == 0

    table = cli("brief", "acme:u-1", "Geocode the new signups", "--tool", "geocoding API")
    assert table.exit_code == 0, table.output
    assert "Brief" in table.stdout and "a lesson about geocoding API" in table.stdout
    body = json.loads(cli("brief", "acme:u-1", "Geocode the new signups", "--tool", "geocoding API", "--json").stdout)
    lesson = body["items"][0]["memory"]
    assert lesson["kind"] == "lesson" and "413" in lesson["content"]

    useful = cli("feedback", "acme:u-1", lesson["id"], "useful")
    assert useful.exit_code == 0, useful.output
    assert "adopted" in useful.stdout and "yes" in useful.stdout
    wrong = cli("feedback", "acme:u-1", lesson["id"], "wrong", "--correction",
                "The geocoding API takes batches of at most 50 addresses.", "--json")  # fmt: skip
    assert wrong.exit_code == 0, wrong.output
    assert json.loads(wrong.stdout)["corrected_by"]

    stats = cli("stats", "acme:u-1")
    assert stats.exit_code == 0, stats.output
    for shown in ("Consolidation", "1 (0 failed)", "0 preference, 0 fact, 1 lesson", "Feedback", "lesson"):
        assert shown in stats.stdout, shown
    assert json.loads(cli("stats", "acme:u-1", "--json").stdout)["hindsight"]["feedback"]["lesson"] == {
        "useful": 1, "not_useful": 0, "wrong": 1, "adopted": 1}  # fmt: skip


def test_feedback_refuses_a_bad_verdict_and_an_unknown_memory(cli: Any) -> None:
    bad = cli("feedback", "acme:u-1", "some-id", "great")
    assert bad.exit_code == 2 and "great" in bad.output
    remember_id(cli, "acme:u-1", LISBON)
    unknown = cli("feedback", "acme:u-1", "ep-nowhere", "useful")
    # stderr names the store first, then the error.
    assert unknown.exit_code == 2 and unknown.stderr.splitlines()[-1].startswith("error: memory_id:")
    assert unknown.stderr.startswith("store: ")


def test_ending_a_session_runs_its_consolidation_now(cli: Any) -> None:
    geocoding_failures(cli, session="s-7")
    result = cli("session", "end", "acme:u-1", "s-7")
    assert result.exit_code == 0, result.output
    assert "Ended session s-7 of acme:u-1" in result.stdout
    assert "ran: 3 new episodes, induced 0 preference, 0 fact, 1 lesson" in result.stdout
    hindsight = json.loads(cli("stats", "acme:u-1", "--json").stdout)["hindsight"]
    assert (hindsight["last_run_reason"], hindsight["unconsolidated"]) == ("session_end", 0)


def test_consolidate_all_runs_every_namespace_with_a_backlog(cli: Any, tmp_path: Path) -> None:
    geocoding_failures(cli, "acme:u-1")
    remember_id(cli, "acme:u-2", PIANO)
    remember_id(cli, "acme:u-3", LISBON)
    services = build(Settings(data_dir=tmp_path / "data", embedder="hashing"))
    assert services.ledger.acquire_lease("acme:u-3", "another process", datetime.now(UTC), 600)
    services.close()

    result = cli("consolidate", "--all")
    assert result.exit_code == 1, result.output
    lines = result.stdout.splitlines()
    assert "acme:u-1: ok, 3 new episodes, induced 0 preference, 0 fact, 1 lesson" in lines
    assert "acme:u-2: ok, 1 new episodes, induced 0 preference, 0 fact, 0 lesson" in lines
    assert any(line.startswith("acme:u-3: failed, consolidation_running:") for line in lines), lines

    again = cli("consolidate", "--all", "--json")
    assert again.exit_code == 1, again.output
    assert list(json.loads(again.stdout)) == ["acme:u-3"]


def test_consolidate_all_with_nothing_to_do_says_so(cli: Any) -> None:
    remember_id(cli, "acme:u-1", LISBON)
    assert cli("consolidate", "acme:u-1").exit_code == 0
    result = cli("consolidate", "--all")
    assert result.exit_code == 0, result.output
    assert "Nothing to consolidate" in result.stdout


@pytest.mark.parametrize("args", [("consolidate",), ("consolidate", "acme:u-1", "--all")])
def test_consolidate_needs_a_namespace_or_all(cli: Any, args: tuple[str, ...]) -> None:
    result = cli(*args)
    assert result.exit_code == 2 and result.stderr.startswith("error: consolidate: give a NAMESPACE or --all")
