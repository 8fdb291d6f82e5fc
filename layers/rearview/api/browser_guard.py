"""What a web browser may do with the local server, checked on every request before anything else (the API routes
and `/mcp` alike): the local server answers on this machine, often with no key at all, and a browser on the same
machine visits other sites.

- Host allow-list (DNS rebinding): a page of another site can re-point its own name at 127.0.0.1, and its requests
  then reach this server carrying that name. Only the loopback names, the bound address and
  `server.allowed_hosts` are served (any port); another Host gets 421, as the MCP SDK answers.
- Origin allow-list (cross-site requests): a browser names the page's origin on every cross-origin request, and
  on same-origin ones that change something. A request from this server's own origin (the Swagger UI at /docs)
  passes; one from an origin in `server.allowed_origins` passes and gets CORS headers; any other gets 403. None is
  allowed by default; a request without Origin (curl, the CLI, an agent's HTTP client) is no browser's.
- CORS preflights (`OPTIONS` with `Access-Control-Request-Method`) are answered for the allowed origins only,
  naming them (never `*`: requests carry credentials).

The JSON content-type rule, the other half of keeping pages out, lives with the resolver
(`rearview.api.request_checks`), as it holds on Lambda too.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from http import HTTPStatus
from typing import Any

from rearview.settings import ServerSettings

LOOPBACK_NAMES = ("localhost", "127.0.0.1", "::1")
_CORS_METHODS = "GET, POST, PUT, PATCH, DELETE"
_CORS_HEADERS = "Authorization, Content-Type, Accept, Mcp-Protocol-Version, Mcp-Session-Id"
_PREFLIGHT_MAX_AGE = "600"


def _response(status: int, body: Mapping[str, str] | None, headers: Mapping[str, str] | None = None) -> dict[str, Any]:
    return {
        "statusCode": status,
        "headers": {"Content-Type": "application/json", **(headers or {})},
        "isBase64Encoded": False,
        "body": json.dumps(dict(body)) if body is not None else "",
    }


def host_name(host_header: str) -> str:
    """The name of a Host header, without its port: `localhost:8765` -> `localhost`, `[::1]:80` -> `::1`."""
    value = host_header.strip().lower()
    if value.startswith("["):
        return value[1:].split("]", 1)[0]
    return value.rsplit(":", 1)[0] if value.count(":") == 1 else value


def origin_host(origin: str) -> str:
    """`http://localhost:8765` -> `localhost:8765` (what a same-origin request's Host header says)."""
    return origin.split("://", 1)[-1].rstrip("/").lower()


@dataclass(frozen=True)
class BrowserGuard:
    """The Host and Origin rules of one local server (its bound address and its settings)."""

    allowed_hosts: frozenset[str]
    allowed_origins: frozenset[str]
    any_host: bool = False

    @classmethod
    def of(cls, settings: ServerSettings, bound_host: str) -> BrowserGuard:
        extra = {host_name(h) for h in settings.allowed_hosts if h.strip() != "*"}
        hosts = frozenset({*LOOPBACK_NAMES, host_name(bound_host.strip("[]")), *extra})
        return cls(hosts, frozenset(settings.allowed_origins), any_host="*" in settings.allowed_hosts)

    def refusal(self, method: str, headers: Mapping[str, str]) -> dict[str, Any] | None:
        """The response that turns the request away (421 foreign Host, 403 foreign Origin, or the answer to a CORS
        preflight), or None when it may proceed. `headers` are lower-cased."""
        host = headers.get("host")
        if host is not None and not self.any_host and host_name(host) not in self.allowed_hosts:
            message = (
                f"host: {host[:100]!r} is not a name of this server (a rebound DNS name?); "
                "add it to REARVIEW_SERVER__ALLOWED_HOSTS to serve it"
            )
            return _response(HTTPStatus.MISDIRECTED_REQUEST.value, {"error": "misdirected", "message": message})
        origin = headers.get("origin")
        if origin is None:
            return None
        cross = not self._same_origin(origin, host)
        if cross and origin.rstrip("/").lower() not in self.allowed_origins:
            message = (
                f"origin: requests from pages of {origin[:100]!r} are refused; "
                "allow that origin with REARVIEW_SERVER__ALLOWED_ORIGINS"
            )
            return _response(HTTPStatus.FORBIDDEN.value, {"error": "forbidden_origin", "message": message})
        if method == "OPTIONS" and "access-control-request-method" in headers:
            return _response(HTTPStatus.NO_CONTENT.value, None, self.cors_headers(headers))
        return None

    def cors_headers(self, headers: Mapping[str, str]) -> dict[str, str]:
        """The CORS headers of a response to an allowed cross-origin request (none for any other)."""
        origin = headers.get("origin")
        if origin is None or origin.rstrip("/").lower() not in self.allowed_origins:
            return {}
        return {
            "Access-Control-Allow-Origin": origin.rstrip("/"),
            "Access-Control-Allow-Methods": _CORS_METHODS,
            "Access-Control-Allow-Headers": _CORS_HEADERS,
            "Access-Control-Expose-Headers": "Retry-After, WWW-Authenticate",
            "Access-Control-Max-Age": _PREFLIGHT_MAX_AGE,
            "Vary": "Origin",
        }

    @staticmethod
    def _same_origin(origin: str, host: str | None) -> bool:
        return host is not None and origin.lower().startswith("http://") and origin_host(origin) == host.lower()
