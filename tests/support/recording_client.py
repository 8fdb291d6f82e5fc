"""A DynamoDB client wrapper that records each call, for tests that count a store's requests and pages."""

from __future__ import annotations

from typing import Any


class RecordingClient:
    """A DynamoDB client that records the name and request of each call, and caps every query's page at `page`
    items (a smaller `Limit` of the caller's own is kept), so a few items already span several pages."""

    def __init__(self, client: Any, page: int) -> None:
        self._client = client
        self._page = page
        self.calls: list[tuple[str, dict[str, Any]]] = []

    def __getattr__(self, name: str) -> Any:
        method = getattr(self._client, name)
        if not callable(method):
            return method

        def call(**kwargs: Any) -> Any:
            self.calls.append((name, kwargs))
            if name == "query":
                kwargs = {**kwargs, "Limit": min(kwargs.get("Limit", self._page), self._page)}
            return method(**kwargs)

        return call

    def names(self) -> set[str]:
        """The names of the calls made so far."""
        return {name for name, _ in self.calls}
