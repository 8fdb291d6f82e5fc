"""The collector kept off the hot paths (rearview/collector.py): paused while a change set is applied, and the
start-up heap frozen once per process by `build()` unless `freeze_start_up_heap` is off."""

from __future__ import annotations

import gc
import json
import os
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

import pytest

from rearview.adapters.hashing_embedder import HashingEmbedder
from rearview.adapters.sqlite import SqliteDatabase, SqliteMemoryStore
from rearview.adapters.sqlite.connection import AppliedChanges
from rearview.collector import paused
from rearview.domain.changes import ChangeSet
from rearview.domain.memory import Episode

pytestmark = pytest.mark.unit

T0 = datetime(2026, 1, 1, tzinfo=UTC)
EMBEDDER = HashingEmbedder(dim=16)

# Two builds in a fresh interpreter: the freeze count after the first, and whether an object made between them is
# still walked by the collector after the second (gc.get_objects lists no frozen object).
_TWO_BUILDS = """
import gc, json, sys, tempfile
from pathlib import Path
from rearview.bootstrap import build
from rearview.settings import Settings
def once():
    with tempfile.TemporaryDirectory() as tmp:
        build(Settings(embedder="hashing", hashing_dim=32, data_dir=Path(tmp))).close()
once()
frozen = gc.get_freeze_count()
marker = [[]]
once()
print(json.dumps([frozen, any(o is marker for o in gc.get_objects())]))
"""


def _two_builds(setting: str | None) -> tuple[int, bool]:
    env = {k: v for k, v in os.environ.items() if k != "REARVIEW_FREEZE_START_UP_HEAP"}
    if setting is not None:
        env["REARVIEW_FREEZE_START_UP_HEAP"] = setting
    done = subprocess.run(
        [sys.executable, "-c", _TWO_BUILDS], env=env, capture_output=True, text=True, timeout=120, check=True
    )
    frozen, marker_collectable = json.loads(done.stdout.strip().splitlines()[-1])
    return int(frozen), bool(marker_collectable)


def test_the_first_build_in_a_process_freezes_the_heap_and_later_ones_do_not() -> None:
    frozen, marker_collectable = _two_builds(None)
    assert frozen > 10_000  # modules, classes, schemas and the services: the start-up heap
    assert marker_collectable  # the second build froze nothing made after the first


def test_nothing_is_frozen_with_the_setting_off() -> None:
    assert _two_builds("false") == (0, True)


def test_paused_turns_the_collector_back_on_only_if_it_was_on() -> None:
    assert gc.isenabled()
    with pytest.raises(RuntimeError), paused():
        assert not gc.isenabled()
        raise RuntimeError("the block failed")
    assert gc.isenabled()
    gc.disable()
    try:
        with paused():
            assert not gc.isenabled()
        assert not gc.isenabled()  # the host had it off: it stays off
    finally:
        gc.enable()


def test_a_change_set_is_applied_with_the_collector_paused(tmp_path: Path) -> None:
    db = SqliteDatabase(tmp_path / "r.db", embedder_name=EMBEDDER.name, dim=EMBEDDER.dim)
    store = SqliteMemoryStore(db)
    seen: list[bool] = []

    def listen(changes: AppliedChanges) -> None:  # runs inside apply, after the commit
        seen.append(gc.isenabled())

    db.subscribe(listen)
    episode = Episode(id="e1", namespace="acme", content="a note", occurred_at=T0, created_at=T0)
    store.apply("acme", ChangeSet(upserts=[(episode, EMBEDDER.embed([episode.content])[0])]))
    assert seen == [False]
    assert gc.isenabled()
    db.close()
