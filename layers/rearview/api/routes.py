"""Every HTTP route, declared once: method, path, the permission it needs, the Lambda function that serves it on AWS,
and the operation (the name of the function that implements it).

The resolver (`rearview.api.http`) registers its routes from this table and checks access against it; the CDK
app (`infra/rearview_infra/api.py`) builds API Gateway's routes from it. So this module imports only the standard
library and `rearview.domain.permissions` (itself standard-library only): synthesis must not need the library's
dependencies.

Paths are written once, as URI templates (`/v1/namespaces/{ns}/recall`, the syntax of API Gateway and OpenAPI);
`Route.powertools_path` renders them the way Powertools registers them (`<ns>`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cached_property
from typing import Literal
from urllib.parse import quote

from rearview.domain.permissions import Permission

# The Lambda functions that serve HTTP on AWS (infra/rearview_infra/functions.py deploys them).
FunctionName = Literal["write", "recall", "forget", "consolidate", "mcp"]
HttpMethod = Literal["GET", "PUT", "POST", "PATCH", "DELETE"]

_PARAMETER = re.compile(r"\{(\w+)\}")


@dataclass(frozen=True)
class Route:
    """One route. `permission` None: the route checks none itself (public, or the MCP endpoint, whose tools each
    check their own)."""

    method: HttpMethod
    path: str
    operation: str
    permission: Permission | None
    function: FunctionName
    summary: str = ""
    tag: str = ""
    # Success codes worth documenting beyond a plain 200 (the API's error codes are documented for every route).
    success: tuple[tuple[int, str], ...] = ((200, "OK"),)
    documented: bool = True
    # API Gateway's key authorizer runs before the function. Off only where the function must answer an
    # unauthenticated caller itself: the health check. (`POST /mcp` has it too: an unauthenticated flood must not
    # start the MCP function; the price is that the gateway's 401/403 carry no `WWW-Authenticate` challenge, see
    # infra/README.md, "The MCP route and its 401".)
    gateway_authorizer: bool = True

    @property
    def powertools_path(self) -> str:
        """The path as Powertools registers it: `/v1/namespaces/<ns>/recall`."""
        return _PARAMETER.sub(r"<\1>", self.path)

    @property
    def gateway_path(self) -> str:
        """The path as API Gateway routes it: `/v1/namespaces/{ns}/recall`."""
        return self.path

    @property
    def route_key(self) -> str:
        """API Gateway's route key, `POST /v1/namespaces/{ns}/recall`."""
        return f"{self.method} {self.gateway_path}"

    def url_path(self, **parameters: str) -> str:
        """The path with its parameters filled in, each percent-encoded (a namespace keeps its `:` and `@`)."""
        return _PARAMETER.sub(lambda m: quote(parameters[m.group(1)], safe=":@"), self.path)

    def match(self, path: str) -> dict[str, str] | None:
        """The raw (still percent-encoded) path parameters if `path` is this route's, else None."""
        found = self._pattern.fullmatch(path)
        return found.groupdict() if found else None

    @cached_property
    def _pattern(self) -> re.Pattern[str]:
        return re.compile("^" + _PARAMETER.sub(r"(?P<\1>[^/]+)", self.path) + "$")


HEALTH_PATH = "/v1/health"
OPENAPI_PATH = "/openapi.json"
DOCS_PATH = "/docs"
UI_PATH = "/ui"
# Served by Powertools' own Swagger UI handler rather than by a route function of ours.
SWAGGER_UI_OPERATION = "swagger_ui"

_NS = "/v1/namespaces/{ns}"
_WORKING = f"{_NS}/sessions/{{sid}}/working"
_READ, _WRITE, _FORGET = Permission.READ, Permission.WRITE, Permission.FORGET

# The routes the HTTP API's resolver serves. A namespaced route is checked against its `{ns}` segment; the key
# routes need admin (and check scopes in the service). GET memory and stats are reads, so recall serves them;
# the key routes read and write `APIKEY#` items, which the write function's table grant covers.
# fmt: off
API_ROUTES: tuple[Route, ...] = (
    Route("GET", HEALTH_PATH, "health", None, "recall",
          "Liveness, version and the embedder in use", "service", gateway_authorizer=False),
    # --- working memory
    Route("PUT", f"{_WORKING}/{{key}}", "put_working", _WRITE, "write",
          "Set one working-memory key of a session (the TTL restarts)", "working memory"),
    Route("GET", _WORKING, "get_working", _READ, "write",
          "A session's unexpired working memory", "working memory"),
    Route("DELETE", _WORKING, "clear_working", _FORGET, "write",
          "Clear a session's working memory", "working memory"),
    # --- memories
    Route("POST", f"{_NS}/memories", "write_memory", _WRITE, "write",
          "Write one memory: 201 when stored, 200 when merged, skipped or already written", "memories",
          success=((201, "Stored"),
                   (200, "Merged into a near-duplicate, skipped, or already written (same id)"),
                   (202, "Accepted for asynchronous writing"))),
    Route("POST", f"{_NS}/memories/batch", "write_batch", _WRITE, "write",
          "Write up to 100 memories in one transaction (all or nothing)", "memories"),
    Route("GET", f"{_NS}/memories/{{id}}", "get_memory", _READ, "recall",
          "One memory (episode or fact) by id", "memories"),
    Route("DELETE", f"{_NS}/memories/{{id}}", "delete_memory", _FORGET, "forget",
          "Forget one memory by id; with cascade, facts induced from it lose it (or go)", "memories"),
    # --- memory by hand: list, edit, history, export and import, erase
    Route("GET", f"{_NS}/memories", "list_memories", _READ, "recall",
          "Memories newest first, a page at a time (an opaque cursor that stays valid while writes happen)",
          "manage"),
    Route("PATCH", f"{_NS}/memories/{{id}}", "edit_memory", _WRITE, "write",
          "Edit a memory (content, tags, entities, importance, confidence, dimension): version + 1, re-embedded; "
          "`If-Match: <version>` answers 412 when it changed since", "manage"),
    Route("GET", f"{_NS}/memories/{{id}}/history", "memory_history", _READ, "recall",
          "A memory's earlier versions and the facts it superseded, oldest first, each with what changed it",
          "manage"),
    Route("GET", f"{_NS}/export", "export_memories", _READ, "recall",
          "Every memory of the namespace as ndjson, newest first, with its history (a page per response on AWS: "
          "follow `X-Next-Cursor`; the local server streams them all)", "manage"),
    Route("POST", f"{_NS}/import", "import_memories", _WRITE, "write",
          "Restore exported memories (JSON `{items}` of up to 1,000, or ndjson lines): ids, times, provenance, "
          "versions and history kept; ids already stored are skipped", "manage"),
    Route("GET", "/v1/namespaces", "list_namespaces", _READ, "recall",
          "The namespaces holding memory that the caller may see (optionally under a `prefix`), with counts",
          "manage"),
    Route("DELETE", _NS, "erase_namespace", _FORGET, "forget",
          "Erase a namespace (with `subtree=true`, every namespace under it): every layer, history, the index, "
          "consolidation's ledger, and the keys whose whole scope is gone; a receipt per namespace", "manage"),
    # --- the operations
    Route("POST", f"{_NS}/recall", "recall", _READ, "recall",
          "Hybrid recall (keyword + vector, fused, decayed, collapsed, cut to a token budget)", "operations"),
    Route("POST", f"{_NS}/forget", "forget", _FORGET, "forget",
          "Forget by ids or by filter, with a receipt per layer", "operations"),
    Route("POST", f"{_NS}/consolidate", "consolidate", Permission.CONSOLIDATE, "consolidate",
          "Run consolidation now: unconsolidated episodes become preferences, facts and lessons, under the "
          "namespace's lease (409 consolidation_running while another run holds it) and the run and daily caps; "
          "the run is recorded in stats (the body is optional)", "operations"),
    Route("GET", f"{_NS}/stats", "stats", _READ, "recall",
          "Counts per layer, last write, recall hit rate, and consolidation's runs, next trigger and feedback",
          "operations"),
    # --- hindsight: before a task and after it
    Route("POST", f"{_NS}/brief", "brief", _READ, "recall",
          "The preferences and lessons that apply to a task about to start, best first, each with why", "hindsight"),
    Route("POST", f"{_NS}/feedback", "feedback", _WRITE, "write",
          "Say what a memory was worth: useful confirms it, wrong lowers its confidence (a correction supersedes "
          "it), not_useful is counted", "hindsight"),
    Route("POST", f"{_NS}/sessions/{{sid}}/end", "end_session", _WRITE, "write",
          "End a session: clear its working memory and fire the session-end consolidation trigger", "hindsight"),
    # --- retention
    Route("GET", f"{_NS}/retention", "get_retention", _READ, "recall",
          "The retention policy that governs the namespace: its own, or the nearest above it", "retention"),
    Route("PUT", f"{_NS}/retention", "put_retention", _FORGET, "forget",
          "Set the namespace's retention policy (episode max age, archive age, keep often-recalled); it governs "
          "the namespaces under it that have none, and is enforced by a sweep (hourly by default)", "retention"),
    Route("DELETE", f"{_NS}/retention", "delete_retention", _FORGET, "forget",
          "Remove the namespace's own retention policy (a policy above it, if any, governs it then)", "retention"),
    # --- API keys
    Route("POST", "/v1/keys", "create_key", Permission.ADMIN, "write",
          "Create an API key (within the caller's scope, with at most its permissions); shown once", "keys",
          success=((201, "Created: the response holds the key, which is never shown again"),)),
    Route("GET", "/v1/keys", "list_keys", Permission.ADMIN, "write",
          "The keys within the caller's scope (never secrets or their hashes)", "keys"),
    Route("DELETE", "/v1/keys/{key_id}", "revoke_key", Permission.ADMIN, "write",
          "Revoke an API key, at once and for good", "keys"),
    Route("PATCH", "/v1/keys/{key_id}", "set_key_limit", Permission.ADMIN, "write",
          "Set an API key's request limit per minute (null: the default; 0: unlimited); at most the caller's own",
          "keys"),
    # --- the API's own documents
    Route("GET", OPENAPI_PATH, "openapi_document", None, "recall", documented=False),
    Route("GET", DOCS_PATH, SWAGGER_UI_OPERATION, None, "recall", documented=False),
    # --- the inspector: a static page and its assets, no data (a browser cannot send the API key on a page
    # load, so they pass the gateway's authorizer by; every call the page makes carries the key the user enters)
    Route("GET", UI_PATH, "ui_page", None, "recall", documented=False, gateway_authorizer=False),
    Route("GET", f"{UI_PATH}/{{asset}}", "ui_asset", None, "recall", documented=False, gateway_authorizer=False),
)
# fmt: on

# MCP over Streamable HTTP (rearview.api.mcp_http). Stateless, so only POST carries JSON-RPC: a GET (a server-sent
# event stream) is not offered. Behind the gateway authorizer like the REST routes; the function checks the key's
# scope and permissions per tool call.
MCP_ROUTE = Route("POST", "/mcp", "mcp", None, "mcp", "MCP (Streamable HTTP)", "mcp")

# The header CloudFront adds to every request it sends to the API when the WAF is in front and the API takes requests
# through it only (infra: rearview:waf with rearview:wafOriginOnly): a secret the gateway authorizer checks, so a
# request to the API's own URL, which skips the WAF, is refused.
EDGE_ORIGIN_HEADER = "x-rearview-origin"

# Every route deployed behind API Gateway.
ROUTE_TABLE: tuple[Route, ...] = (*API_ROUTES, MCP_ROUTE)

_BY_OPERATION = {route.operation: route for route in ROUTE_TABLE}


def route_named(operation: str) -> Route:
    """The route of an operation (`recall`, `write_memory` ...); KeyError if there is none."""
    return _BY_OPERATION[operation]


def match_api_route(method: str, path: str) -> tuple[Route, dict[str, str]] | None:
    """The API route a request goes to and its raw path parameters; None if no route has this method and path."""
    for route in API_ROUTES:
        if route.method == method.upper():
            parameters = route.match(path)
            if parameters is not None:
                return route, parameters
    return None


def route_permission(method: str, path: str) -> tuple[Permission | None, str | None] | None:
    """(permission, raw `{ns}` segment) of the API route a request goes to; None if no route matches."""
    matched = match_api_route(method, path)
    if matched is None:
        return None
    route, parameters = matched
    return route.permission, parameters.get("ns")


def allowed_methods(path: str) -> list[str]:
    """The methods the API serves on `path`, sorted (empty when no route has this path): 405 versus 404."""
    return sorted({route.method for route in API_ROUTES if route.match(path) is not None})
