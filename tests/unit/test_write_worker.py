"""The asynchronous write path in the core: WriteService.accept, Services.submit, and the worker's DLQ policy,
with in-memory fakes of the queue and the dead letters over the embedded backend."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from rearview.bootstrap import Services, build
from rearview.clock import ManualClock
from rearview.domain.memory import Episode
from rearview.domain.write import MemoryWrite, parse_queued_write, queued_write_body
from rearview.errors import ConcurrentUpdate, InvalidInput
from rearview.service.write_worker import WriteWorker
from rearview.settings import Settings

pytestmark = pytest.mark.unit


@dataclass
class FakeQueue:
    sent: list[tuple[str, list[MemoryWrite]]] = field(default_factory=list)

    def send(self, namespace: str, items: Sequence[MemoryWrite]) -> None:
        self.sent.append((namespace, list(items)))

    def bodies(self, clock: ManualClock) -> list[str]:
        return [queued_write_body(ns, items, clock.now()) for ns, items in self.sent]


@dataclass
class FakeDeadLetters:
    letters: list[tuple[str, str, str]] = field(default_factory=list)

    def send(self, body: str, reason: str, error: str) -> None:
        self.letters.append((body, reason, error))

    def reasons(self) -> list[str]:
        return [reason for _, reason, _ in self.letters]


@pytest.fixture
def queue() -> FakeQueue:
    return FakeQueue()


@pytest.fixture
def queued(tmp_path: Path, clock: ManualClock, queue: FakeQueue) -> Iterator[Services]:
    svc = build(Settings(data_dir=tmp_path / "data", embedder="hashing"), clock=clock, queue=queue)
    yield svc
    svc.close()


def test_submit_accepts_with_ids_and_times_assigned_now(queued: Services, queue: FakeQueue, clock: ManualClock) -> None:
    results = queued.writer.submit("acme", [MemoryWrite(content="Booked the ferry to Naxos for June"),
                                     MemoryWrite(content="Dana's birthday is on May 4", id="bday")])  # fmt: skip

    assert [r.status for r in results] == ["accepted", "accepted"]
    assert results[1].id == "bday"
    ((namespace, items),) = queue.sent
    assert namespace == "acme"
    assert [i.id for i in items] == [r.id for r in results]
    assert all(i.occurred_at == clock.now() for i in items)
    assert queued.store.get("acme", results[0].id) is None  # nothing stored until the worker runs


def test_accept_refuses_what_write_batch_refuses_and_queues_nothing(queued: Services, queue: FakeQueue) -> None:
    with pytest.raises(InvalidInput) as raised:
        queued.writer.submit("acme", [MemoryWrite(content="fine text here"), MemoryWrite(content="bell\x07")])

    assert raised.value.field == "items.1.content"
    with pytest.raises(InvalidInput):
        queued.writer.submit("acme", [MemoryWrite(content="a fine episode", dimension="diet")])
    with pytest.raises(InvalidInput):
        queued.writer.submit("bad namespace!", [MemoryWrite(content="a fine episode")])
    assert queue.sent == []


def test_accept_answers_low_importance_items_as_skipped_without_queueing(queued: Services, queue: FakeQueue) -> None:
    results = queued.writer.submit("acme", [MemoryWrite(content="ok")])

    assert [(r.status, r.reason) for r in results] == [("skipped", "low_importance")]
    assert queue.sent == []


def test_submit_without_a_queue_writes_at_once(services: Services) -> None:
    results = services.writer.submit("acme", [MemoryWrite(content="Booked the ferry to Naxos for June")])

    assert results[0].status == "stored"
    assert services.store.get("acme", results[0].id) is not None


def test_the_worker_stores_a_message_once_however_often_it_is_delivered(
    queued: Services, queue: FakeQueue, clock: ManualClock
) -> None:
    accepted = queued.writer.submit("acme", [MemoryWrite(content="Booked the ferry to Naxos for June")])
    (body,) = queue.bodies(clock)
    dead = FakeDeadLetters()
    worker = WriteWorker(queued.writer, dead, max_receive_count=3)

    first = worker.process(body, 1)
    second = worker.process(body, 2)

    assert first.status == second.status == "stored"
    assert [r.status for r in first.results] == ["stored"]
    assert [(r.status, r.reason) for r in second.results] == [("stored", "duplicate_id")]
    stored = queued.store.get("acme", accepted[0].id)
    assert stored is not None and stored.version == 1 and stored.confirmations == 1
    assert dead.letters == []


def test_a_redelivered_write_that_merged_confirms_its_memory_once(
    queued: Services, queue: FakeQueue, clock: ManualClock
) -> None:
    # A write that merged into a near-duplicate stores no id of its own, so the redelivery is not known by its id:
    # it is known as the occurrence the memory last took in, at the time the write was accepted for.
    worker = WriteWorker(queued.writer, FakeDeadLetters(), max_receive_count=3)
    text = "The user prefers dark mode in every editor they use"
    queued.writer.submit("acme", [MemoryWrite(content=text, session_id="s-1")])
    clock.advance(hours=1)
    queued.writer.submit("acme", [MemoryWrite(content=text, session_id="s-2")])
    first_body, second_body = queue.bodies(clock)
    (stored,) = worker.process(first_body, 1).results

    merged = [worker.process(second_body, n).results[0] for n in (1, 2, 3)]

    assert [(r.status, r.reason) for r in merged] == [
        ("merged", "near_duplicate"),
        ("merged", "same_occurrence"),
        ("merged", "same_occurrence"),
    ]
    assert {r.merged_into for r in merged} == {stored.id}
    memory = queued.store.get("acme", stored.id)
    assert isinstance(memory, Episode) and memory.confirmations == 2 and memory.sessions == ["s-1", "s-2"]
    # The same words said again later are a new occurrence, confirmed as ever.
    clock.advance(hours=1)
    queued.writer.submit("acme", [MemoryWrite(content=text, session_id="s-2")])
    assert worker.process(queue.bodies(clock)[-1], 1).results[0].reason == "near_duplicate"
    again = queued.store.get("acme", stored.id)
    assert again is not None and again.confirmations == 3


def test_poison_and_invalid_messages_go_straight_to_the_dead_letters(queued: Services, clock: ManualClock) -> None:
    dead = FakeDeadLetters()
    worker = WriteWorker(queued.writer, dead, max_receive_count=5)
    invalid = queued_write_body("acme", [MemoryWrite(content="bell\x07 rings", id="x")], clock.now())

    assert worker.process("not json", 1).reason == "poison"
    assert worker.process('{"namespace": "acme", "items": []}', 1).reason == "poison"
    assert worker.process(invalid, 1).reason == "invalid"
    assert dead.reasons() == ["poison", "poison", "invalid"]
    assert dead.letters[2][0] == invalid  # the original body, unchanged
    assert "content" in dead.letters[2][2]


class _FailingWriter:
    def write_batch(self, namespace: str, items: Sequence[MemoryWrite]) -> list[object]:
        raise ConcurrentUpdate("store busy")


def test_a_failing_message_is_retried_until_its_last_receive_then_dead_lettered(clock: ManualClock) -> None:
    dead = FakeDeadLetters()
    worker = WriteWorker(_FailingWriter(), dead, max_receive_count=3)  # type: ignore[arg-type]
    body = queued_write_body("acme", [MemoryWrite(content="Booked the ferry", id="f")], clock.now())

    for receive in (1, 2):
        with pytest.raises(ConcurrentUpdate):
            worker.process(body, receive)
    outcome = worker.process(body, 3)

    assert (outcome.status, outcome.reason, outcome.namespace) == ("dead_lettered", "retries_exhausted", "acme")
    assert dead.reasons() == ["retries_exhausted"]
    assert "ConcurrentUpdate: store busy" in dead.letters[0][2]


def test_the_message_body_round_trips(clock: ManualClock) -> None:
    items = [MemoryWrite(content="Dana prefers tea", layer="semantic", dimension="drink", id="d", tags=["x"])]

    parsed = parse_queued_write(queued_write_body("acme:u-1", items, clock.now()))

    assert parsed.namespace == "acme:u-1" and parsed.items == items and parsed.accepted_at == clock.now()


def test_a_write_accepted_before_its_namespace_was_erased_is_dropped_and_one_after_is_stored(
    tmp_path: Path, clock: ManualClock
) -> None:
    from datetime import timedelta

    from rearview.adapters.in_memory_erasure_marks import InMemoryErasureMarks

    marks = InMemoryErasureMarks()
    stored = build(Settings(data_dir=tmp_path / "data", embedder="hashing"), clock=clock, erasure_marks=marks)
    letters = FakeDeadLetters()
    worker = WriteWorker(stored.writer, letters, max_receive_count=3, erasures=marks)
    before = queued_write_body("acme", [MemoryWrite(content="Booked the ferry to Naxos", id="ferry")], clock.now())
    clock.advance(seconds=5)
    receipt = stored.eraser.erase("acme")
    assert receipt.queued_writes_dropped_until == clock.now() + timedelta(days=15)
    clock.advance(seconds=5)
    after = queued_write_body("acme", [MemoryWrite(content="Booked the train to Porto", id="train")], clock.now())

    assert worker.process(before, 1).status == "dropped_erased"
    assert worker.process(after, 1).status == "stored"
    assert stored.store.get("acme", "ferry") is None and stored.store.get("acme", "train") is not None
    assert letters.letters == [], "what the erase removed is never kept in a dead-letter queue"
    stored.close()
