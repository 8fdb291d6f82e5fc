"""The one composition root: `build(settings, **overrides) -> Services`.

The local server, the CLI, the Lambda handlers and the tests all get their services from here; tests and benchmarks
pass fakes (a ManualClock, a HashingEmbedder, ...) by keyword instead of patching globals.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from rearview.clock import SystemClock
from rearview.errors import ConfigurationError
from rearview.model import Stats, validate_namespace
from rearview.ports import Clock, Embedder, MemoryStore, SearchIndex, Summarizer
from rearview.service.consolidate import ConsolidationService, ExtractiveSummarizer
from rearview.service.forget import ForgetService
from rearview.service.recall import RecallService
from rearview.service.working_memory import WorkingMemoryService
from rearview.service.write import WriteService
from rearview.settings import Settings

# Relevance floor for an embedder that does not declare one.
_DEFAULT_RELEVANCE_FLOOR = 0.3


@dataclass
class Services:
    """Everything an edge (HTTP, MCP, CLI, Lambda) calls. One instance per process, built at start-up."""

    settings: Settings
    store: MemoryStore
    index: SearchIndex
    embedder: Embedder
    clock: Clock
    working: WorkingMemoryService
    writer: WriteService
    recaller: RecallService
    forgetter: ForgetService
    consolidator: ConsolidationService

    def stats(self, namespace: str) -> Stats:
        validate_namespace(namespace)
        return self.store.stats(namespace, self.clock.now())

    def close(self) -> None:
        close = getattr(self.store, "close", None)
        if callable(close):
            close()


def build_embedder(settings: Settings) -> Embedder:
    """The embedder named by the settings; imports its dependencies only when chosen."""
    if settings.embedder == "hashing":
        from rearview.adapters.hashing_embedder import HashingEmbedder

        return HashingEmbedder(dim=settings.hashing_dim)
    if settings.embedder == "minilm":
        from rearview.adapters.onnx_minilm_embedder import OnnxMiniLMEmbedder

        return OnnxMiniLMEmbedder()
    raise ConfigurationError(f"embedder: unknown embedder {settings.embedder!r}", field="embedder")


def build(settings: Settings | None = None, **overrides: Any) -> Services:
    """Wire the services. Overrides (by keyword): clock, embedder, store, index, summarizer."""
    settings = settings or Settings()
    clock: Clock = overrides.pop("clock", None) or SystemClock()
    embedder: Embedder = overrides.pop("embedder", None) or build_embedder(settings)
    summarizer: Summarizer = overrides.pop("summarizer", None) or ExtractiveSummarizer()
    store: MemoryStore | None = overrides.pop("store", None)
    index: SearchIndex | None = overrides.pop("index", None)
    if overrides:
        raise TypeError(f"unknown overrides: {sorted(overrides)}")
    if store is None or index is None:
        from rearview.adapters.sqlite_store import SqliteDatabase, SqliteMemoryStore, SqliteSearchIndex

        settings.data_dir.mkdir(parents=True, exist_ok=True)
        db = SqliteDatabase(settings.data_dir / "rearview.db", embedder_name=embedder.name, dim=embedder.dim)
        store = store or SqliteMemoryStore(db)
        index = index or SqliteSearchIndex(db)
    floor = float(getattr(embedder, "relevance_floor", _DEFAULT_RELEVANCE_FLOOR))
    return Services(
        settings=settings,
        store=store,
        index=index,
        embedder=embedder,
        clock=clock,
        working=WorkingMemoryService(store, clock, settings.working_ttl_seconds),
        writer=WriteService(store, index, embedder, clock, settings.write),
        recaller=RecallService(store, index, embedder, clock, settings.recall, floor),
        forgetter=ForgetService(store),
        consolidator=ConsolidationService(store, index, summarizer, clock, settings.consolidate, settings.write),
    )
