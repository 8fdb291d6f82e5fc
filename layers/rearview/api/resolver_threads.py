"""A resolver that resolves requests on many threads at once.

Powertools keeps the request it is resolving on the resolver: the current event on the router class (shared by every
resolver in the process), the route's arguments and our principal in the resolver's `context`. On Lambda one request
at a time is resolved, so that is safe; the local server resolves requests on a pool of threads, so each thread
needs its own. `PerThreadRequests` makes `current_event`, `lambda_context` and `context` per thread: properties the
resolver's own code and its middlewares read through `self` / `app`, set by `begin()` before each resolution.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import Any

from aws_lambda_powertools.event_handler.api_gateway import ApiGatewayResolver
from aws_lambda_powertools.utilities.data_classes.common import BaseProxyEvent
from aws_lambda_powertools.utilities.typing import LambdaContext


class _Request(threading.local):
    current_event: BaseProxyEvent | None = None
    lambda_context: LambdaContext | None = None

    def __init__(self) -> None:
        self.context: dict[str, Any] = {}


class PerThreadRequests(ApiGatewayResolver):
    """Mixed in before a Powertools resolver: the request being resolved, one per thread."""

    _request: _Request

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self._request = _Request()
        super().__init__(*args, **kwargs)

    def begin(self, event: Mapping[str, Any], context: LambdaContext) -> None:
        """Make `event` the current thread's request (Powertools sets it on the router class, which every thread
        shares; this resolver reads it from here)."""
        self._request.current_event = self._to_proxy_event(dict(event))
        self._request.lambda_context = context

    @property
    def current_event(self) -> BaseProxyEvent:
        event = self._request.current_event
        if event is None:
            raise RuntimeError("no request is being resolved on this thread")
        return event

    @current_event.setter
    def current_event(self, value: BaseProxyEvent) -> None:
        self._request.current_event = value

    @property
    def lambda_context(self) -> LambdaContext:
        context = self._request.lambda_context
        if context is None:
            raise RuntimeError("no request is being resolved on this thread")
        return context

    @lambda_context.setter
    def lambda_context(self, value: LambdaContext) -> None:
        self._request.lambda_context = value

    @property
    def context(self) -> dict[str, Any]:
        return self._request.context

    @context.setter
    def context(self, value: dict[str, Any]) -> None:
        self._request.context = value
