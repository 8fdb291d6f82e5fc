"""Consolidation that runs by itself, measured: streams of episodes written to the embedded backend with the local
server's background worker on (real threads, the system clock), under three trigger settings in the same run:

- `defaults`: failure streak 3 and count 50 (the defaults);
- `streak only`: failure streak 3, no count trigger;
- `count only` (the baseline): count 50, no failure streak: what a lesson waits for without the streak trigger.

Each stream has `--namespaces` tenants written round-robin, each with `--episodes` episodes: chat noise, a request
repeated across sessions (a preference), and tool calls where one tool fails three times in a row before a change
works (a lesson). It reports, per setting:

- the delay from the write of a streak's third failure to its lesson being readable (p50/p95; a lesson that is
  not readable when the stream ends and the worker has drained is reported as missing);
- the delay from a job being sent to the end of the run that took it up, by trigger;
- runs per 1,000 episodes, by trigger, and the share of episodes no run has seen when the stream ends.

    PYTHONPATH=layers:bench python bench/hindsight_triggers.py [--namespaces 20] [--episodes 150]
"""

from __future__ import annotations

import argparse
import random
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from hindsight_scenarios import NOISE_EN, NOISE_ZH
from metrics import format_table
from rearview.bootstrap import Services, build, local_consolidation
from rearview.domain.hindsight import lesson_dimension
from rearview.domain.hindsight_runs import ConsolidationJob
from rearview.domain.search import MemoryFilter
from rearview.domain.write import MemoryWrite
from rearview.ports import ConsolidationJobs
from rearview.settings import HindsightSettings, Settings

SETTINGS: dict[str, dict[str, Any]] = {
    "defaults": {},
    "streak only": {"count_trigger": 0},
    "count only": {"failure_streak": 0},
}
TOOLS = ["geocoder", "billing API", "search API", "mailer", "exporter", "uploader", "crawler", "scheduler"]
REQUESTS = ["Please keep answers short.", "Reply in Spanish, please.", "Use metric units.", "No emojis, thanks."]
# How often the monitor looks for the lessons still awaited.
POLL_SECONDS = 0.005


@dataclass
class Awaited:
    namespace: str
    dimension: str
    written_at: float
    readable_at: float | None = None


@dataclass
class SentJob:
    job: ConsolidationJob
    sent_at: datetime


@dataclass
class StreamFigures:
    setting: str
    episodes: int
    lesson_delays: list[float] = field(default_factory=list)
    lessons_missing: int = 0
    job_delays: dict[str, list[float]] = field(default_factory=dict)
    runs: Counter[str] = field(default_factory=Counter)
    unconsolidated: int = 0
    seconds: float = 0.0


class TimedJobs:
    """The worker, with the time each job was sent to it recorded."""

    def __init__(self, worker: ConsolidationJobs, services: Services) -> None:
        self._worker = worker
        self._services = services
        self.sent: list[SentJob] = []
        self._lock = threading.Lock()

    def send(self, job: ConsolidationJob) -> None:
        with self._lock:
            self.sent.append(SentJob(job, self._services.clock.now()))
        self._worker.send(job)


def stream(namespace: str, episodes: int, rng: random.Random) -> list[tuple[MemoryWrite, str | None]]:
    """One tenant's episodes, with the lesson dimension a write completes (the third failure of a streak)."""
    tool = rng.choice(TOOLS)
    request = rng.choice(REQUESTS)
    noise = NOISE_EN + NOISE_ZH
    out: list[tuple[MemoryWrite, str | None]] = []
    streak_at = rng.randint(episodes // 4, episodes // 2)
    for i in range(episodes):
        session = f"{namespace}-s{i // 15}"
        if streak_at <= i < streak_at + 4:
            n = i - streak_at
            failed = n < 3
            out.append((
                MemoryWrite(
                    content=f"Called the {tool} with a batch of {400 - 100 * n} items",
                    event_type="tool_call", entities=[tool], session_id=session,
                    outcome="HTTP 413 Payload Too Large" if failed else "200 OK",
                ),
                lesson_dimension(tool) if n == 2 else None,
            ))  # fmt: skip
        elif i % 17 == 5:
            out.append((MemoryWrite(content=request, session_id=session), None))
        else:
            out.append((MemoryWrite(content=f"{rng.choice(noise)} (#{i})", session_id=session), None))
    return out


def _monitor(services: Services, awaited: list[Awaited], lock: threading.Lock, stop: threading.Event) -> None:
    """Marks each awaited lesson readable as soon as the store has it."""
    while not stop.is_set():
        with lock:
            open_ = [a for a in awaited if a.readable_at is None]
        for item in open_:
            found = services.store.list_memories(item.namespace, MemoryFilter(layers=("semantic",), kinds=("lesson",)))
            if any(getattr(m, "dimension", None) == item.dimension for m in found):
                item.readable_at = time.perf_counter()
        time.sleep(POLL_SECONDS)


def run_stream(setting: str, namespaces: int, episodes: int, work: Path, seed: int) -> StreamFigures:
    hindsight = HindsightSettings(schedule_hours=0, **SETTINGS[setting])
    settings = Settings(data_dir=work / setting.replace(" ", "-"), embedder="hashing", hindsight=hindsight)
    services = build(settings)
    rng = random.Random(seed)
    names = [f"bench:t{i}" for i in range(namespaces)]
    streams = {ns: stream(ns, episodes, rng) for ns in names}
    figures = StreamFigures(setting=setting, episodes=namespaces * episodes)
    awaited: list[Awaited] = []
    lock, stop = threading.Lock(), threading.Event()
    started = time.perf_counter()
    with local_consolidation(services) as worker:
        assert worker is not None
        timed = TimedJobs(worker, services)
        services.consolidation.attach(timed)
        monitor = threading.Thread(target=_monitor, args=(services, awaited, lock, stop), daemon=True)
        monitor.start()
        for i in range(episodes):
            for ns in names:
                item, completes = streams[ns][i]
                services.writer.write(ns, item)
                if completes:
                    with lock:
                        awaited.append(Awaited(ns, completes, time.perf_counter()))
        worker.drain(120)
        time.sleep(0.2)
        stop.set()
        monitor.join()
    figures.seconds = time.perf_counter() - started
    _collect(services, names, timed.sent, awaited, figures)
    services.close()
    return figures


def _collect(
    services: Services, names: Sequence[str], sent: list[SentJob], awaited: list[Awaited], figures: StreamFigures
) -> None:
    figures.lesson_delays = sorted(a.readable_at - a.written_at for a in awaited if a.readable_at is not None)
    figures.lessons_missing = sum(1 for a in awaited if a.readable_at is None)
    runs = {ns: sorted(services.ledger.runs(ns, limit=1000), key=lambda r: r.started_at) for ns in names}
    for ns_runs in runs.values():
        figures.runs.update(r.reason for r in ns_runs)
    for item in sent:
        took = next((r for r in runs[item.job.namespace] if r.started_at >= item.sent_at), None)
        if took is not None:
            delay = (took.finished_at - item.sent_at).total_seconds()
            figures.job_delays.setdefault(item.job.reason, []).append(delay)
    figures.unconsolidated = sum(services.store.unconsolidated_count(ns) for ns in names)


def _pct(values: Sequence[float], q: float) -> str:
    if not values:
        return "-"
    ordered = sorted(values)
    return f"{1000 * ordered[min(len(ordered) - 1, int(q * len(ordered)))]:.0f}"


def report(results: Sequence[StreamFigures]) -> str:
    rows = []
    for f in results:
        per_k = 1000 / f.episodes
        rows.append([
            f.setting, f.episodes, f"{f.seconds:.1f}",
            f"{_pct(f.lesson_delays, 0.5)} / {_pct(f.lesson_delays, 0.95)}",
            f"{len(f.lesson_delays)} of {len(f.lesson_delays) + f.lessons_missing}",
            f"{sum(f.runs.values()) * per_k:.1f}",
            ", ".join(f"{reason} {n * per_k:.1f}" for reason, n in sorted(f.runs.items())) or "-",
            "; ".join(f"{r} {_pct(d, 0.5)}/{_pct(d, 0.95)}" for r, d in sorted(f.job_delays.items())) or "-",
            f"{f.unconsolidated / f.episodes:.3f}",
        ])  # fmt: skip
    return format_table(
        ["triggers", "episodes", "seconds", "3rd failure -> lesson ms p50/p95", "lessons readable",
         "runs / 1,000 episodes", "by trigger", "job sent -> run done ms p50/p95", "unconsolidated share"],
        rows,
        title="== consolidation by itself: trigger delays and runs (local worker, embedded backend) ==",
    )  # fmt: skip


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--namespaces", type=int, default=20)
    parser.add_argument("--episodes", type=int, default=150, help="episodes per namespace")
    parser.add_argument("--seed", type=int, default=5)
    args = parser.parse_args(argv)
    results = []
    with tempfile.TemporaryDirectory(prefix="rearview-triggers-") as tmp:
        for setting in SETTINGS:
            results.append(run_stream(setting, args.namespaces, args.episodes, Path(tmp), args.seed))
            print(f"{setting}: done in {results[-1].seconds:.1f} s", file=sys.stderr)
    print(report(results))
    print("target: the lesson readable within seconds of the streak's third failure, without a consolidate call")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
