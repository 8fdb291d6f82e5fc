"""`rearview.client` against a live LocalServer on a temporary data directory (real HTTP, real services): every
route, sync and async, the domain's errors, and the retries on 429 and 503 (against a small real server that
answers them)."""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from rearview.api.local_server import LocalServer
from rearview.bootstrap import Services, build
from rearview.client import ApiError, AsyncRearviewClient, RearviewClient, Retry
from rearview.domain.brief import BriefRequest, FeedbackRequest
from rearview.domain.forget import ForgetRequest
from rearview.domain.write import MemoryWrite
from rearview.errors import InvalidInput, NamespaceForbidden, NotFound, PreconditionFailed, Unauthorized
from rearview.settings import Settings

pytestmark = pytest.mark.integration

NS = "acme:u-42"


@pytest.fixture
def server(tmp_path: Path) -> Iterator[tuple[LocalServer, Services]]:
    services = build(Settings(data_dir=tmp_path / "data", embedder="hashing"))
    with LocalServer(services.settings, services, host="127.0.0.1", port=0) as running:
        yield running, services
    services.close()


def test_every_route_through_the_sync_client(server: tuple[LocalServer, Services]) -> None:
    running, services = server
    admin_key = services.access.create_key("acme", ["read", "write", "forget", "consolidate", "admin"])[1]
    with RearviewClient(running.url, token=admin_key) as rv:
        assert rv.health().status == "ok"
        stored = rv.write(NS, "Booked the 9:40 flight to Lisbon, aisle seat", tags=["travel"], session_id="s-1")
        assert stored.status == "stored"
        batch = rv.write_batch(NS, [MemoryWrite(content="Dana confirmed the Lisbon hotel for May 3")])
        fact = rv.write(NS, "The user prefers aisle seats", layer="semantic", dimension="seat")
        assert rv.get(NS, stored.id).content.startswith("Booked the 9:40")
        assert rv.recall(NS, "which seat did I book?").results

        edited = rv.edit(NS, fact.id, if_version=1, content="The user prefers window seats")
        assert edited.version == 2
        with pytest.raises(PreconditionFailed):
            rv.edit(NS, fact.id, if_version=1, importance=0.9)
        with pytest.raises(InvalidInput) as bad:
            rv.edit(NS, stored.id, confidence=0.5)  # an episode has no confidence
        assert bad.value.field == "confidence"
        assert [v.changed_by for v in rv.history(NS, fact.id).versions] == ["write", "edit"]
        assert [m.id for m in rv.iter_memories(NS, limit=1)] == [fact.id, batch.results[0].id, stored.id]

        exported = list(rv.export(NS))
        assert {line.id for line in exported} == {fact.id, stored.id, batch.results[0].id}
        restored = rv.import_memories("acme:u-43", exported)
        assert (restored.restored, restored.skipped) == (3, 0)
        assert rv.import_memories("acme:u-43", "\n".join(line.model_dump_json() for line in exported)).skipped == 3
        assert {n.namespace for n in rv.list_namespaces(prefix="acme").namespaces} == {NS, "acme:u-43"}

        assert rv.put_working(NS, "s-1", "goal", {"step": 2}, ttl_seconds=600).value == {"step": 2}
        assert rv.get_working(NS, "s-1").entries == {"goal": {"step": 2}}
        assert rv.clear_working(NS, "s-1").cleared == 1
        assert rv.end_session(NS, "s-1").session_id == "s-1"
        assert isinstance(rv.brief(NS, BriefRequest(task="Book a flight to Lisbon")).items, list)
        assert rv.feedback(NS, FeedbackRequest(memory_id=fact.id, verdict="useful")).verdict == "useful"
        assert rv.consolidate(NS).namespace == NS
        assert rv.stats(NS).counts["episodic"] == 2
        assert rv.delete(NS, stored.id).deleted["episodic"] == 1
        assert rv.forget(NS, ForgetRequest(tags=["travel"])).namespace == NS

        created = rv.create_key(NS, ["read"], description="client test")
        assert created.key.startswith("rv_") and any(k.key_id == created.key_id for k in rv.list_keys().keys)
        assert rv.revoke_key(created.key_id).status == "revoked"

        receipt = rv.erase("acme:u-43", subtree=True)
        assert receipt.namespaces["acme:u-43"].episodic == 2
        with pytest.raises(NotFound):
            rv.get(NS, "nothing-here")
        with pytest.raises(NamespaceForbidden):
            rv.stats("globex")
    with RearviewClient(running.url, token="rv_0123456789abcdef_wrong") as stranger, pytest.raises(Unauthorized):
        stranger.stats(NS)


def test_the_async_client(server: tuple[LocalServer, Services]) -> None:
    running, _ = server

    async def scenario() -> None:
        async with AsyncRearviewClient(running.url) as rv:
            first = await rv.write(NS, "Signed the Lisbon venue contract for the March offsite")
            await rv.write(NS, "Ordered catering for forty people for the offsite")
            edited = await rv.edit(NS, first.id, tags=["offsite"])
            assert edited.tags == ["offsite"]
            page = await rv.list_memories(NS, limit=1)
            assert len(page.items) == 1 and page.next_cursor
            assert len([m async for m in rv.iter_memories(NS, limit=1)]) == 2
            assert len([line async for line in rv.export(NS)]) == 2
            hits = await rv.recall(NS, "offsite venue contract")
            assert hits.results[0].id == first.id
            assert (await rv.erase(NS)).namespaces[NS].episodic == 2

    asyncio.run(scenario())


class _Flaky(BaseHTTPRequestHandler):
    """Answers 503, then 429, then the health check."""

    answers = [503, 429]

    def do_GET(self) -> None:
        status = self.answers.pop(0) if self.answers else 200
        body = json.dumps({"status": "ok", "version": "x", "embedder": "e", "dim": 1} if status == 200 else {
            "error": "unavailable", "message": "try again"})  # fmt: skip
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Retry-After", "0")
        self.end_headers()
        self.wfile.write(body.encode())

    def log_message(self, *args: object) -> None:
        return


def test_429_and_503_are_retried_and_then_reported() -> None:
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Flaky)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    url = f"http://127.0.0.1:{httpd.server_address[1]}"
    try:
        with RearviewClient(url, retry=Retry(attempts=3, base=0.01)) as rv:
            assert rv.health().status == "ok"
        _Flaky.answers = [503, 503, 503]
        with RearviewClient(url, retry=Retry(attempts=1, base=0.01)) as rv, pytest.raises(ApiError) as failed:
            rv.health()
        assert failed.value.status == 503
    finally:
        httpd.shutdown()
        httpd.server_close()
