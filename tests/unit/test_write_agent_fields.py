"""The write path's handling of what agents send (issue 37): metadata and source stored and redacted, time to live
turned into an expiry by the injected clock, near-duplicates merged only within the same metadata, long texts
chunked, and the sweep forgetting what expired (with what was induced from it alone)."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import pytest

from rearview.bootstrap import Services
from rearview.clock import ManualClock
from rearview.domain.changes import ChangeSet
from rearview.domain.forget import ForgetRequest
from rearview.domain.memory import Episode, Fact
from rearview.domain.recall import RecallQuery
from rearview.domain.write import MemoryWrite, parse_queued_write, queued_write_body
from rearview.errors import InvalidInput, MemoryTooLarge
from rearview.service.write import redact_write
from support.write_queue import RecordingQueue, queued_services

pytestmark = pytest.mark.unit
NS = "acme:u-42"
SECRET = "sk_live_4eC39HqLyjWDarjtT1zdp7dc"
LONG = "\n\n".join(
    " ".join(f"Item {p}.{i} of the shipping plan covers region {i}." for i in range(40)) for p in range(4)
)


def test_metadata_source_and_expiry_are_stored_as_given(services: Services, clock: ManualClock) -> None:
    written = services.writer.write_batch(
        NS,
        [
            MemoryWrite(content="Shipped the Apollo billing page", metadata={"project": "apollo", "n": [1, 2.5]},
                        source="https://tracker.example/APL-7", ttl_seconds=3600),
            MemoryWrite(content="Dana owns billing", layer="semantic", entities=["Dana"], source="user said",
                        expires_at=clock.now() + timedelta(days=30)),
        ],
    )  # fmt: skip
    episode, fact = (services.store.get(NS, result.id) for result in written)

    assert isinstance(episode, Episode) and isinstance(fact, Fact)
    assert (
        episode.metadata == {"project": "apollo", "n": [1, 2.5]} and episode.source == "https://tracker.example/APL-7"
    )
    assert episode.expires_at == clock.now() + timedelta(seconds=3600)
    assert fact.entities == ["Dana"] and fact.source == "user said"
    assert fact.expires_at == clock.now() + timedelta(days=30) and fact.metadata == {}


def test_every_new_text_field_is_redacted() -> None:
    item = MemoryWrite(
        content="Rotated the Stripe key",
        source=f"https://dash.example/keys?token={SECRET}",
        metadata={"note": f"key {SECRET}", "AKIAIOSFODNN7EXAMPLE": 1, "nested": {"list": [f"x {SECRET}"]}},
    )
    redacted, kinds = redact_write(item)
    dumped = redacted.model_dump_json()

    assert SECRET[8:20] not in dumped and "AKIAIOSF" not in dumped
    assert set(kinds) >= {"stripe_key", "aws_access_key"}
    assert redacted.metadata["nested"]["list"][0].startswith("x [REDACTED:")


@pytest.fixture
def queued(tmp_path: Path, clock: ManualClock) -> Iterator[tuple[Services, RecordingQueue]]:
    with queued_services(tmp_path / "data", clock) as built:
        yield built


def test_a_queued_write_expires_counted_from_its_acceptance(
    queued: tuple[Services, RecordingQueue], clock: ManualClock
) -> None:
    """The worker may store it minutes later: the time to live counts from when it was accepted, and the message
    carries the expiry (and the metadata, redacted) rather than the time to live."""
    services, queue = queued
    accepted_at = clock.now()
    [result] = services.writer.submit(NS, [MemoryWrite(content="Renewed the Apollo domain", ttl_seconds=600,
                                                       metadata={"note": SECRET})])  # fmt: skip
    body = queued_write_body(queue.sent[0][0], queue.sent[0][1], accepted_at)
    message = parse_queued_write(body)
    clock.advance(minutes=5)
    services.writer.write_batch(NS, message.items)

    assert result.status == "accepted" and SECRET not in body
    stored = services.store.get(NS, result.id)
    assert stored is not None and stored.expires_at == accepted_at + timedelta(seconds=600)


def test_a_long_text_queued_whole_is_chunked_by_the_worker_under_its_id(
    queued: tuple[Services, RecordingQueue],
) -> None:
    services, queue = queued
    [result] = services.writer.submit(NS, [MemoryWrite(content=LONG)])
    [item] = queue.sent[0][1]

    assert result.status == "accepted" and item.id == result.id and item.content == LONG
    stored = services.writer.write_batch(NS, [item])
    assert stored[0].id == result.id and stored[0].chunks[0] == result.id and len(stored[0].chunks) >= 4
    again = services.writer.submit(NS, [MemoryWrite(content=LONG, id=result.id)])  # a retry: no conflict
    assert again[0].status == "accepted"


def test_near_duplicates_merge_only_within_the_same_metadata(services: Services, clock: ManualClock) -> None:
    first = services.writer.write(NS, MemoryWrite(content="Maria prefers window seats on long flights",
                                                  metadata={"project": "apollo"}, ttl_seconds=60))  # fmt: skip
    other = services.writer.write(NS, MemoryWrite(content="Maria prefers window seats on long flights!",
                                                  metadata={"project": "gemini"}))  # fmt: skip
    again = services.writer.write(NS, MemoryWrite(content="Maria prefers window seats on long flights.",
                                                  metadata={"project": "apollo"}, ttl_seconds=600))  # fmt: skip

    assert other.status == "stored" and other.id != first.id
    assert again.status == "merged" and again.merged_into == first.id
    merged = services.store.get(NS, first.id)
    # Said again, it is kept as long as the later write wants it.
    assert merged is not None and merged.expires_at == clock.now() + timedelta(seconds=600)
    forever = services.writer.write(NS, MemoryWrite(content="Maria prefers window seats on long flights",
                                                    metadata={"project": "apollo"}))  # fmt: skip
    assert forever.merged_into == first.id
    assert services.store.get(NS, first.id).expires_at is None  # type: ignore[union-attr]


def test_no_write_merges_into_a_chunk_of_a_long_text(services: Services) -> None:
    long = services.writer.write(NS, MemoryWrite(content=LONG))
    chunk = services.store.get(NS, long.chunks[1])
    assert isinstance(chunk, Episode)

    said_again = services.writer.write(NS, MemoryWrite(content=chunk.content[:1500]))

    assert said_again.status == "stored" and said_again.id not in long.chunks


@pytest.mark.parametrize(
    ("item", "field", "said"),
    [
        (MemoryWrite(content=LONG, id="d" * 126), "id", "at most 125 characters for a text stored as chunks"),
        (MemoryWrite(content="x" * 600, layer="semantic"), "content", "at most 500 characters"),
        (MemoryWrite(content="Renewed the domain", ttl_seconds=5, expires_at="2030-01-01T00:00:00Z"), "ttl_seconds",
         "not both"),
        (MemoryWrite(content="Renewed the domain", expires_at="2026-03-10T12:00:00Z"), "expires_at",
         "a time to come"),
    ],
)  # fmt: skip
def test_what_cannot_be_stored_is_refused_naming_the_field(
    services: Services, item: MemoryWrite, field: str, said: str
) -> None:
    with pytest.raises(InvalidInput) as refused:
        services.writer.write_batch(NS, [item])
    assert refused.value.field == f"items.0.{field}" and said in refused.value.message
    assert services.store.list_namespaces() == []


def test_the_hard_limit_is_the_models_own() -> None:
    with pytest.raises(ValueError, match="at most 50000 characters"):
        MemoryWrite(content="x" * 50_001)
    assert issubclass(MemoryTooLarge, InvalidInput)


def test_forgetting_a_long_text_forgets_every_chunk_and_a_later_chunk_goes_alone(services: Services) -> None:
    one = services.writer.write(NS, MemoryWrite(content=LONG))
    two = services.writer.write(NS, MemoryWrite(content=LONG.replace("shipping", "billing")))

    alone = services.forgetter.forget_one(NS, two.chunks[2])
    whole = services.forgetter.forget(NS, ForgetRequest(ids=[one.id]))

    assert alone.ids == [two.chunks[2]]
    assert sorted(whole.ids) == sorted(one.chunks)
    assert [services.store.get(NS, chunk) is None for chunk in two.chunks] == [i == 2 for i in range(len(two.chunks))]


def test_the_purge_forgets_what_expired_with_what_was_induced_from_it_alone(
    services: Services, clock: ManualClock
) -> None:
    brief = services.writer.write(NS, MemoryWrite(content="Visitor badge code for the Apollo lab is kept at desk B",
                                                  ttl_seconds=60))  # fmt: skip
    other = services.writer.write("acme:u-7", MemoryWrite(content="Visitor badge code kept at desk C", ttl_seconds=60))
    induced = Fact(id="f-badge", namespace=NS, content="Badges are kept at the front desk", provenance=[brief.id],
                   created_at=clock.now(), last_confirmed_at=clock.now())  # fmt: skip
    services.store.apply(NS, ChangeSet(upserts=[(induced, services.embedder.embed([induced.content])[0])]))

    assert services.retention.purge_expired() == 0
    clock.advance(seconds=61)
    recalled = services.recaller.recall(NS, RecallQuery(query="visitor badge code Apollo lab"))
    assert brief.id not in [h.id for h in recalled.results]

    assert services.retention.purge_expired() == 3  # both expired episodes, and the fact induced from one alone
    assert services.store.get(NS, brief.id) is None and services.store.get(NS, "f-badge") is None
    assert services.store.get("acme:u-7", other.id) is None
    assert services.retention.purge_expired() == 0
