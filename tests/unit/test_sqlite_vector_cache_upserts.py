"""A change set applied to a namespace's vector cache in place: a batch of new rows appended a column at a time
(`upsert_many`) leaves the cache exactly as upserting them one by one does; a batch's updates go one by one before
its appends, and a batch that cannot append so takes the one-by-one path, refusals included."""

from __future__ import annotations

import numpy as np
import pytest

from rearview.adapters.sqlite.connection import CachedRow
from rearview.adapters.sqlite.vector_cache import VectorCache

pytestmark = pytest.mark.unit

DIM = 16
RNG = np.random.default_rng(7)


def _row(ref: int, memory_id: str, vector: bool = True, session: str | None = None) -> CachedRow:
    return CachedRow(
        layer="episodic",
        ref=ref,
        id=memory_id,
        time=1_700_000_000.0 + ref,
        active=ref % 3 != 0,
        consolidated=ref % 2 == 0,
        session_id=session,
        event_type="tool_call" if ref % 4 == 0 else None,
        label="failure" if ref % 5 == 0 else None,
        vector=RNG.standard_normal(DIM).astype(np.float32) * (ref + 1) if vector else None,
    )


def _state(cache: VectorCache) -> dict[str, object]:
    n = cache.size
    return {
        "size": n,
        "ids": list(cache.ids),
        "position": dict(cache.position),
        "unsynced": list(cache.unsynced),
        "codes": (dict(cache.session_codes), dict(cache.event_type_codes), dict(cache.label_codes)),
        **{name: getattr(cache, name)[:n].tobytes() for name in VectorCache._COLUMNS},
    }


def _cache_holding(rows: list[CachedRow]) -> VectorCache:
    cache = VectorCache("episodic", DIM, generation=1, capacity=4)
    for row in rows:
        assert cache.upsert(row)
    return cache


def test_appended_rows_leave_the_cache_as_upserting_them_one_by_one_does(monkeypatch: pytest.MonkeyPatch) -> None:
    before = [_row(ref, f"m{ref}", session="s1") for ref in range(1, 6)]
    batch = [_row(ref, f"m{ref}", session=f"s{ref % 3}") for ref in range(10, 200, 3)]  # grows the arrays too
    one_by_one, together = _cache_holding(before), _cache_holding(before)

    assert all(one_by_one.upsert(row) for row in batch)
    monkeypatch.setattr(together, "upsert", lambda row: pytest.fail("appends go a column at a time"))
    assert together.upsert_many(batch)

    assert _state(together) == _state(one_by_one)


def test_updates_go_one_by_one_and_the_new_rows_a_column_at_a_time(monkeypatch: pytest.MonkeyPatch) -> None:
    before = [_row(ref, f"m{ref}") for ref in (1, 2, 5)]
    batch = [
        _row(2, "m2", session="merged"),
        _row(4, "novec", vector=False),
        *(_row(r, f"n{r}") for r in range(30, 60)),
    ]
    one_by_one, together = _cache_holding(before), _cache_holding(before)
    upserted: list[str] = []
    upsert = together.upsert

    def counted(row: CachedRow) -> bool:
        upserted.append(row.id)
        return upsert(row)

    monkeypatch.setattr(together, "upsert", counted)

    assert all(one_by_one.upsert(row) for row in batch)
    assert together.upsert_many(batch)

    assert upserted == ["m2", "novec"]
    assert _state(together) == _state(one_by_one)


@pytest.mark.parametrize(
    "batch",
    [
        pytest.param([_row(2, "m2"), _row(30, "new")], id="an update among the inserts"),
        pytest.param([_row(30, "new"), _row(31, "novec", vector=False)], id="a row without a vector"),
        pytest.param([_row(3, "old-ref")], id="a ref below the last cached one (refused)"),
        pytest.param([_row(2, "m2"), _row(30, "new"), _row(31, "new")], id="an id twice"),
    ],
)
def test_a_batch_that_is_not_only_appends_is_applied_one_by_one(batch: list[CachedRow]) -> None:
    before = [_row(ref, f"m{ref}") for ref in (1, 2, 5)]
    one_by_one, together = _cache_holding(before), _cache_holding(before)

    expected = all(one_by_one.upsert(row) for row in batch)
    assert together.upsert_many(batch) is expected
    assert _state(together) == _state(one_by_one)
