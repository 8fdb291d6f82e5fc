"""The RequestQuota contract, against every backend: SQLite (a file on disk, shared by processes), DynamoDB (on
moto) and the in-memory fake. Windows are chosen by an injected time, never slept through."""

from __future__ import annotations

import subprocess
import sys
import threading
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from rearview.domain.quota import COUNTER_RETENTION, QuotaWindow
from support.quota_backends import QUOTAS, CountingQuota, QuotaBackend

pytestmark = pytest.mark.contract

T0 = datetime(2026, 3, 1, 9, 30, 12, tzinfo=UTC)
KEY = "0123456789abcdef"
OTHER = "fedcba9876543210"


@pytest.fixture(params=list(QUOTAS))
def backend(request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[QuotaBackend]:
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"):
        monkeypatch.setenv(name, "testing")
    yield from QUOTAS[request.param](tmp_path)


def window(seconds_after_t0: float = 0) -> QuotaWindow:
    return QuotaWindow.containing(T0 + timedelta(seconds=seconds_after_t0))


def test_a_window_admits_exactly_the_limit_then_refuses_without_counting(backend: QuotaBackend) -> None:
    quota = backend.quota
    taken = [quota.take(KEY, window(), 3) for _ in range(5)]
    assert taken == [True, True, True, False, False]
    assert quota.counted(KEY, window()) == 3, "refused requests are not counted"


def test_the_next_window_starts_from_zero(backend: QuotaBackend) -> None:
    quota = backend.quota
    for _ in range(2):
        quota.take(KEY, window(), 2)
    assert not quota.take(KEY, window(30), 2), "the same minute (12 s -> 42 s past 9:30)"
    assert quota.take(KEY, window(48), 2), "9:31:00, the next minute"
    assert quota.counted(KEY, window(48)) == 1
    assert quota.counted(KEY, window()) == 2


def test_keys_are_counted_apart(backend: QuotaBackend) -> None:
    quota = backend.quota
    for _ in range(3):
        quota.take(KEY, window(), 3)
    assert not quota.take(KEY, window(), 3)
    assert quota.take(OTHER, window(), 3), "one key's spent quota never refuses another's"
    assert quota.counted(OTHER, window()) == 1


def test_a_lower_limit_refuses_what_a_higher_one_admitted(backend: QuotaBackend) -> None:
    # A key whose limit is lowered mid-window is refused at once once its count reaches the new limit.
    quota = backend.quota
    for _ in range(4):
        assert quota.take(KEY, window(), 10)
    assert not quota.take(KEY, window(), 4)
    assert quota.take(KEY, window(), 5)


def test_another_handle_on_the_same_storage_shares_the_counter(backend: QuotaBackend) -> None:
    other = backend.another()
    assert backend.quota.take(KEY, window(), 2)
    assert other.take(KEY, window(), 2)
    assert not backend.quota.take(KEY, window(), 2)
    assert not other.take(KEY, window(), 2)


def test_racing_callers_never_count_past_the_limit(backend: QuotaBackend) -> None:
    handles = [backend.another() for _ in range(4)]
    admitted: list[bool] = []
    lock = threading.Lock()

    def hammer(handle: CountingQuota) -> None:
        for _ in range(15):
            result = handle.take(KEY, window(), 25)
            with lock:
                admitted.append(result)

    threads = [threading.Thread(target=hammer, args=(h,)) for h in handles]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert admitted.count(True) == 25
    assert admitted.count(False) == 60 - 25
    assert backend.quota.counted(KEY, window()) == 25


def test_an_expired_windows_counter_is_dropped_or_never_read_again(backend: QuotaBackend) -> None:
    quota = backend.quota
    quota.take(KEY, window(), 1)
    later = QuotaWindow.containing(window().expires_at + timedelta(minutes=1))
    assert later.start > window().start + COUNTER_RETENTION
    assert quota.take(KEY, later, 1), "a new window, long after"
    assert quota.take(OTHER, later, 1)
    # The backend may have dropped the old counter (SQLite and the fake purge; DynamoDB's TTL does it later), and
    # never counts into it again: a window is named by its start.
    assert quota.counted(KEY, window()) in (0, 1)


_PROCESS = """
import sys
from datetime import datetime, UTC
from pathlib import Path
from rearview.adapters.sqlite import SqliteDatabase, SqliteRequestQuota
from rearview.domain.quota import QuotaWindow

db = SqliteDatabase(Path(sys.argv[1]), embedder_name=None, dim=None)
quota = SqliteRequestQuota(db)
window = QuotaWindow.containing(datetime.fromisoformat(sys.argv[2]))
print(sum(quota.take("0123456789abcdef", window, 70) for _ in range(40)))
db.close()
"""


def test_sqlite_processes_on_one_file_share_the_counter(tmp_path: Path) -> None:
    """What a file shares that the other backends share otherwise: processes (the local server and another)."""
    opened = QUOTAS["sqlite"](tmp_path)
    backend = next(opened)
    assert backend.path is not None
    backend.quota.take(KEY, window(), 70)  # the file exists, migrated
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", _PROCESS, str(backend.path), T0.isoformat()], stdout=subprocess.PIPE, text=True
        )
        for _ in range(3)
    ]
    admitted = [int(proc.communicate(timeout=120)[0]) for proc in procs]
    assert all(proc.returncode == 0 for proc in procs)
    assert sum(admitted) == 69, f"3 processes x 40 tries at a limit of 70 (1 taken before): {admitted}"
    assert backend.quota.counted(KEY, window()) == 70
    next(opened, None)  # closes its databases


def test_a_lease_counts_several_requests_at_once_only_while_they_fit(backend: QuotaBackend) -> None:
    quota = backend.quota
    assert quota.take(KEY, window(), 10, 4)
    assert quota.take(KEY, window(), 10, 4)
    assert not quota.take(KEY, window(), 10, 4), "8 + 4 would pass 10: nothing counted"
    assert quota.counted(KEY, window()) == 8
    assert quota.take(KEY, window(), 10, 2)
    assert not quota.take(KEY, window(), 10)
    assert not quota.take(OTHER, window(), 3, 4), "a lease larger than the limit never fits"
    assert not quota.take(OTHER, window(), 3, 0)
    assert quota.counted(OTHER, window()) == 0
