"""AsyncRearviewClient: the HTTP API from Python with asyncio, over httpx (see `rearview.client`); the same methods
as RearviewClient, awaited."""

from __future__ import annotations

import asyncio
import functools
from collections.abc import AsyncIterator, Callable, Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any, TypeVar

import httpx

from rearview.client import calls
from rearview.client.calls import Call
from rearview.client.transport import RETRIED_STATUSES, Retry, answer, request_of
from rearview.domain.bulk_load import EpisodeLoad, LoadResult
from rearview.domain.edit import MemoryEdit
from rearview.domain.http_bodies import KeyCreated, KeyInfo
from rearview.domain.listing import ListQuery, MemoryPage
from rearview.domain.memory import Memory
from rearview.domain.recall import RecallQuery, RecallResponse
from rearview.domain.transfer import ExportedEpisode, ExportedFact, ImportResult
from rearview.domain.working import WorkingEntry, WorkingWrite
from rearview.domain.write import BatchResult, MemoryWrite, WriteResult
from rearview.operations.offers import Operation

T = TypeVar("T")


class AsyncRearviewClient:
    """The HTTP API: a method per operation of the catalogue (named by its row, or shaped here where a method
    builds its request from arguments or streams), taking and returning the service's own pydantic models. Errors come
    back as the domain's exceptions (`rearview.errors.NotFound`, `InvalidInput` with its `field` ...); 429 and
    503 are retried with backoff. Use it as a context manager, or call `close()`."""

    def __init__(
        self,
        base_url: str = "http://127.0.0.1:8765",
        token: str | None = None,
        *,
        timeout: float = 60.0,
        retry: Retry | None = None,
        http: httpx.AsyncClient | None = None,
    ) -> None:
        self.token = token
        self.retry = retry or Retry()
        self._http = http or httpx.AsyncClient(base_url=base_url, timeout=timeout)

    async def __aenter__(self) -> AsyncRearviewClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def close(self) -> None:
        await self._http.aclose()

    async def run(self, call: Call[T]) -> T:
        """Send one call (retrying 429 and 503) and read its answer."""
        attempt = 0
        while True:
            response = await self._http.send(request_of(self._http, call, self.token))
            if response.status_code not in RETRIED_STATUSES or attempt >= self.retry.attempts:
                return answer(call, response)
            await asyncio.sleep(self.retry.delay(attempt, response))
            attempt += 1

    async def call(self, operation: Operation, *args: Any, **kwargs: Any) -> Any:
        """Run `operation` of the catalogue with the arguments its function takes (the services and caller left
        out): `rv.call(OPERATIONS.named("stats"), "acme")`."""
        return await self.run(calls.call_of(operation, *args, **kwargs))

    def __getattr__(self, name: str) -> Callable[..., Any]:
        """Every operation the catalogue offers to the client (`rv.stats("acme")`, `rv.sources("acme", id)` ...),
        as a method of the name its row gives, taking what the operation takes."""
        operation = calls.client_operation(name)
        return functools.partial(self.call, operation)

    # --- memories and the operations

    async def write(self, namespace: str, item: MemoryWrite | str, **fields: Any) -> WriteResult:
        """Write one memory: a MemoryWrite, or its content with the other fields by keyword."""
        memory = item if isinstance(item, MemoryWrite) else MemoryWrite(content=item, **fields)
        return await self.run(calls.write(namespace, memory))

    async def write_batch(self, namespace: str, items: Sequence[MemoryWrite]) -> BatchResult:
        return await self.run(calls.write_batch(namespace, items))

    async def load(self, namespace: str, items: Sequence[EpisodeLoad | Mapping[str, Any]]) -> LoadResult:
        """Load a history of episodes (up to 1,000 a call) through the bulk path, each with its `vector` if you
        bring one; ids already stored are skipped."""
        return await self.run(calls.load(namespace, items))

    async def recall(self, namespace: str, query: RecallQuery | str, **fields: Any) -> RecallResponse:
        """Recall: a RecallQuery, or the query text with the other fields by keyword."""
        request = query if isinstance(query, RecallQuery) else RecallQuery(query=query, **fields)
        return await self.run(calls.recall(namespace, request))

    # --- working memory

    async def put_working(
        self, namespace: str, session_id: str, key: str, value: Any, ttl_seconds: int | None = None
    ) -> WorkingEntry:
        write = WorkingWrite(value=value, ttl_seconds=ttl_seconds)
        return await self.run(calls.put_working(namespace, session_id, key, write))

    # --- memory by hand

    async def list_memories(self, namespace: str, query: ListQuery | None = None, **fields: Any) -> MemoryPage:
        return await self.run(calls.list_memories(namespace, query or ListQuery(**fields)))

    async def iter_memories(self, namespace: str, **fields: Any) -> AsyncIterator[Memory]:
        """Every matching memory, newest first, page after page."""
        query = ListQuery(**fields)
        while True:
            page = await self.list_memories(namespace, query)
            for memory in page.items:
                yield memory
            if page.next_cursor is None:
                return
            query = query.model_copy(update={"cursor": page.next_cursor})

    async def edit(self, namespace: str, memory_id: str, if_version: int | None = None, **changes: Any) -> Memory:
        """Edit a memory (content=, tags=, entities=, importance=, confidence=, dimension=); with `if_version`,
        PreconditionFailed when it changed since that version."""
        return await self.run(calls.edit(namespace, memory_id, MemoryEdit(**changes), if_version))

    async def export(self, namespace: str) -> AsyncIterator[ExportedEpisode | ExportedFact]:
        """Every memory of the namespace with its history, newest first, read page by page as the server sends."""
        async for text in self.export_text(namespace):
            for line in calls.export_lines(text):
                yield line

    async def export_text(self, namespace: str) -> AsyncIterator[str]:
        """The export's ndjson, chunk by chunk (one page of AWS's, or the local server's stream in pieces)."""
        cursor: str | None = None
        while True:
            call = calls.export_page(namespace, cursor)
            async with self._http.stream(
                call.method, call.path, params=call.params, headers=self._headers()
            ) as response:
                if not response.is_success:
                    await response.aread()
                    answer(call, response)
                buffered = ""
                async for chunk in response.aiter_text():
                    buffered += chunk
                    complete, _, buffered = buffered.rpartition("\n")
                    if complete:
                        yield complete + "\n"
                if buffered:
                    yield buffered
                cursor = response.headers.get(calls.NEXT_CURSOR)
            if not cursor:
                return

    async def import_memories(
        self, namespace: str, items: Iterable[ExportedEpisode | ExportedFact | Mapping[str, Any]] | str
    ) -> ImportResult:
        return await self.run(calls.import_memories(namespace, items))

    # --- API keys (admin)

    async def create_key(
        self,
        namespace: str,
        permissions: Sequence[str],
        expires_at: datetime | None = None,
        description: str | None = None,
        requests_per_minute: int | None = None,
    ) -> KeyCreated:
        return await self.run(calls.create_key(namespace, permissions, expires_at, description, requests_per_minute))

    async def set_key_limit(self, key_id: str, requests_per_minute: int | None) -> KeyInfo:
        """Set a key's request limit per minute (None: the deployment's default; 0: unlimited)."""
        return await self.run(calls.set_key_limit(key_id, requests_per_minute))

    def _headers(self) -> dict[str, str]:
        headers = {"User-Agent": "rearview-python-client"}
        if self.token:
            headers["Authorization"] = f"Bearer {self.token}"
        return headers
