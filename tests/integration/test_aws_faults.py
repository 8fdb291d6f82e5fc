"""Faults on the asynchronous write path, on moto and the OpenSearch test double, through the real handlers:

- a worker whose store fails on 10% of its attempts at random (seeded), so messages are retried by the queue;
- duplicate deliveries (a poller's delete lost after success, at random);
- an index that is down for a while: the worker, which checks near-duplicates in the index, answers them from the
  table meanwhile (the search fallback) and keeps storing; index sync fails meanwhile, and the stream catches up
  once the index is back. Messages that run out of receives (the store's failures) go to the DLQ with the reason
  `retries_exhausted`;
- a poison message (not JSON) and an invalid one (a control character), which go straight to the DLQ.

For N accepted writes (500; 10,000 with REARVIEW_LONG_TESTS=1) the test checks that every accepted write is
either stored (in DynamoDB, once, and in the index, once) or in the DLQ with its reason, and prints the tally
(shown with `pytest -s`).
"""

from __future__ import annotations

import json
import os
import random
from collections import Counter
from collections.abc import Iterator
from typing import Any

import pytest

from rearview.adapters.dynamodb import DynamoDBMemoryStore
from rearview.adapters.sqs_write_queue import SqsDeadLetters
from rearview.api.lambda_runtime import FunctionRuntime
from rearview.bootstrap import Services, build
from rearview.domain.changes import ChangeSet
from rearview.settings import Settings
from support.aws_stack import (
    MAX_RECEIVE_COUNT,
    OPENSEARCH_INDEX,
    TABLE,
    AwsStack,
    FakeLambdaContext,
    StreamDriver,
    aws_stack,
)
from support.events import load_event
from support.stats import usage_stats

pytestmark = [pytest.mark.integration, pytest.mark.slow]

NS = "acme:faults"
N_WRITES = 10_000 if os.environ.get("REARVIEW_LONG_TESTS") == "1" else 500
FAILURE_RATE = 0.1
LOST_DELETE_RATE = 0.05
SEED = 20260310
WRITE_CHUNK = 100
# Distinct words, so that no two generated memories are near-duplicates (which would be merged, not stored).
VOCABULARY = [f"{a}{b}" for a in ("ka", "lo", "mi", "nu", "pe", "ro", "su", "ti", "vo", "ze") for b in
              ("bar", "cen", "dol", "fir", "gam", "hul", "jet", "kor", "lim", "mon", "nip", "pax", "quo", "rud",
               "sev", "tor", "urn", "vex", "wil", "yad")]  # fmt: skip


class TransientStoreFailure(RuntimeError):
    """What the flaky worker raises: a throttle or timeout in all but name."""


class FlakyStore:
    """The real DynamoDB store, except that `apply` fails (before writing anything) on a share of attempts."""

    def __init__(self, store: DynamoDBMemoryStore, rng: random.Random, rate: float) -> None:
        self._store = store
        self._rng = rng
        self._rate = rate
        self.failures = 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self._store, name)

    def apply(self, namespace: str, changes: ChangeSet) -> None:
        if self._rng.random() < self._rate:
            self.failures += 1
            raise TransientStoreFailure("injected: the store did not answer")
        self._store.apply(namespace, changes)


@pytest.fixture
def stack() -> Iterator[AwsStack]:
    with aws_stack() as s:
        yield s


def _content(rng: random.Random, i: int) -> str:
    return f"Note {i}: " + " ".join(rng.sample(VOCABULARY, 9))


def _write(handler: Any, content: str) -> dict[str, Any]:
    event = load_event("memory_write", path=f"/v1/namespaces/{NS}/memories", body={"content": content})
    response = handler(event, FakeLambdaContext(function_name="rearview-write"))
    assert response["statusCode"] == 202, response
    return json.loads(response["body"])


# moto keeps every write in Python: 0.1-0.25 s per queued write, retries included, on the 2-core machines CI runs
# on. The timeout only catches a hang: a slow day must not fail the test.
@pytest.mark.timeout(max(600, N_WRITES * 1.2))
def test_every_accepted_write_is_stored_and_indexed_once_or_dead_lettered_with_its_reason(stack: AwsStack) -> None:
    rng = random.Random(SEED)
    # The count trigger reads the namespace's unconsolidated count after every write; moto answers that COUNT query
    # by projecting every item of the index, which would make this test four times slower. Hindsight's triggers
    # have their own tests (test_aws_hindsight); here they stay wired (the consolidation queue) but count nothing.
    stack.env["REARVIEW_HINDSIGHT__COUNT_TRIGGER"] = "0"
    # One key sends every write, as fast as moto takes them: a load test, not a tenant, so its key is not throttled
    # (REARVIEW_LONG_TESTS sends 10,000 in a few minutes; per-key throttling has its own tests, test_throttling).
    stack.env["REARVIEW_THROTTLE__REQUESTS_PER_MINUTE"] = "0"
    # The worker asks the index again on every search rather than leaving it alone for 30 s of wall-clock time
    # after a failure: the outage then ends when the test says (`outage`, in polls), not when the machine's clock
    # does (on a slow machine the window covered many more writes than the outage). During the outage each write's
    # duplicate check reads the newest episodes through moto, ~2 s apiece at the default 500: 50 still proves the
    # fallback answers (its reach has its own tests, test_search_fallback).
    stack.env["REARVIEW_AWS__SEARCH_FALLBACK_SECONDS"] = "0"
    stack.env["REARVIEW_AWS__SEARCH_FALLBACK_SCAN"] = "50"
    write = stack.load_function("write").handler
    worker_settings = stack.settings("write_worker")
    flaky: list[FlakyStore] = []

    def build_flaky(settings: Settings) -> Services:
        store = FlakyStore(
            DynamoDBMemoryStore(TABLE, client=stack.dynamodb, settings=settings.aws, embedder_name="hashing-256",
                                dim=256),
            random.Random(SEED + 1),
            FAILURE_RATE,
        )  # fmt: skip
        flaky.append(store)
        return build(settings, store=store)

    worker = FunctionRuntime(
        "write_worker",
        settings=worker_settings,
        build=build_flaky,
        dead_letters=SqsDeadLetters(stack.dlq_url, client=stack.sqs),
    ).queue_handler()
    sync = stack.load_function("index_sync").handler
    stream = StreamDriver(stack)

    stack.sqs.send_message(QueueUrl=stack.queue_url, MessageBody='{"namespace": "acme:faults", "items": [')
    invalid_body = json.dumps(
        {
            "namespace": NS,
            "items": [{"content": "bell\x07 rings", "id": "invalid-1"}],
            "accepted_at": "2026-03-10T12:00:00Z",
        }
    )
    stack.sqs.send_message(QueueUrl=stack.queue_url, MessageBody=invalid_body)

    def lose_delete(message: dict[str, Any]) -> bool:
        # Only early receives: a message redelivered past the redrive limit would be moved by SQS itself.
        receives = int(message["Attributes"]["ApproximateReceiveCount"])
        return receives < MAX_RECEIVE_COUNT - 1 and rng.random() < LOST_DELETE_RATE

    polls = 0
    outage = range(N_WRITES // 40, N_WRITES // 40 + max(8, N_WRITES // 200))  # polls during which the index is down
    during_outage = Counter[str]()

    def poll() -> int:
        nonlocal polls
        down = polls in outage
        stack.double.set_down(down)
        delivered = stack.deliver(worker, lose_delete=lose_delete)
        received = int(delivered["received"])
        if down:
            during_outage["received"] += received
            during_outage["failed"] += len(delivered.get("batchItemFailures", []))
        polls += 1
        if polls % 5 == 0:
            stream.pump(sync)
        return received

    # Writes arrive while the worker polls, as in production: a chunk of writes, then a little less than a chunk's
    # worth of polls, so a backlog builds up (the outage always finds messages to fail) without the whole run
    # sitting in the queue (moto's SQS walks every queued message on each call).
    accepted: list[str] = []
    for start in range(0, N_WRITES, WRITE_CHUNK):
        accepted.extend(_write(write, _content(rng, i))["id"] for i in range(start, min(N_WRITES, start + WRITE_CHUNK)))
        for _ in range(WRITE_CHUNK // 10 - 2):
            poll()
    while poll() > 0 or polls <= outage.stop:
        pass
    stack.double.set_down(False)
    while stream.pump(sync):
        pass
    assert stream.pending == []

    # --- the tally -------------------------------------------------------------------------------------------
    store = DynamoDBMemoryStore(TABLE, client=stack.dynamodb)
    stored: dict[str, Any] = {}
    for start in range(0, len(accepted), 50):
        stored.update(store.get_many(NS, accepted[start : start + 50]))
    documents = Counter(doc["memory_id"] for doc in stack.double.documents(OPENSEARCH_INDEX))
    dead = stack.dead_letters()
    reasons = Counter(d.get("reason") for d in dead)
    dead_ids: dict[str, str] = {}
    for letter in dead:
        try:
            items = json.loads(letter["body"])["items"]
        except (ValueError, KeyError):
            continue
        for item in items:
            dead_ids[item["id"]] = letter["reason"]
    lost = [i for i in accepted if i not in stored and i not in dead_ids]
    stored_and_dead = [i for i in accepted if i in stored and i in dead_ids]
    dead_lettered = len([i for i in accepted if i in dead_ids and i not in stored])
    tally = {
        "accepted": len(accepted),
        "stored": len(stored),
        "indexed": sum(1 for i in stored if documents[i] == 1),
        "dead_lettered": dead_lettered,
        "dlq_messages_by_reason": dict(reasons),
        "stored_and_also_dead_lettered (a duplicate delivery that ran out of receives)": len(stored_and_dead),
        "lost": len(lost),
        "injected_store_failures": sum(f.failures for f in flaky),
        "worker_polls": polls,
        "delivered_during_the_index_outage": dict(during_outage),
    }
    print("\nwrite path fault tally:", json.dumps(tally, indent=2))

    assert lost == []
    assert all(documents[i] == 1 for i in stored), "every stored memory is indexed exactly once"
    assert set(documents) == set(stored), "nothing indexed that is not stored"
    assert all(m.version == 1 and m.confirmations == 1 for m in stored.values()), "no write applied twice"
    assert usage_stats(store, NS, store_time(stored)).counts["episodic"] == len(stored), "no memory under another id"
    assert None not in reasons, "every dead letter carries its reason"
    # One poison message; a lost delete after the worker dead-lettered it delivers it, and dead-letters it, again.
    assert reasons["poison"] >= 1 and len({d["body"] for d in dead if d.get("reason") == "poison"}) == 1
    assert dead_ids.get("invalid-1") == "invalid"
    # The index outage stops no write: the worker's near-duplicate checks read the table meanwhile, so the messages
    # of the outage fail only as often as the flaky store makes any fail (without the fallback, every one did).
    assert during_outage["received"] > 0
    assert during_outage["failed"] < during_outage["received"] / 2, during_outage
    assert all(reason == "retries_exhausted" for i, reason in dead_ids.items() if i != "invalid-1")
    assert sum(f.failures for f in flaky) > 0
    assert len(stored) + dead_lettered == N_WRITES


def store_time(stored: dict[str, Any]) -> Any:
    return max(m.created_at for m in stored.values())
