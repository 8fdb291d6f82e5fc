"""Every HTTP route: those of the operations (`rearview.operations.catalogue`, each declared once with its method,
path, permission and the Lambda function that serves it on AWS), and the API's own documents, the inspector's
files and MCP's endpoint.

The resolver (`rearview.api.http`) registers its routes from this table and checks access against it; the CDK
app (`infra/rearview_infra/api.py`) builds API Gateway's routes from it. So this module, and what it imports (the
catalogue's rows, `rearview.operations.offers`, `rearview.domain.permissions`), need only the standard library:
synthesis must not need the library's dependencies.
"""

from __future__ import annotations

from rearview.domain.permissions import Permission
from rearview.operations.catalogue import OPERATIONS
from rearview.operations.offers import FunctionName, HttpMethod, Route

__all__ = ["FunctionName", "HttpMethod", "Route"]

HEALTH_PATH = OPERATIONS.named("health").route.path
OPENAPI_PATH = "/openapi.json"
DOCS_PATH = "/docs"
UI_PATH = "/ui"
# Served by Powertools' own Swagger UI handler rather than by a route function of ours.
SWAGGER_UI_OPERATION = "swagger_ui"

# The routes the HTTP API's resolver serves: every operation's, then the API's own documents and the inspector. A
# namespaced route is checked against its `{ns}` segment; the key routes need admin (and check scopes in the
# service). GET memory and stats are reads, so recall serves them; the key routes read and write `APIKEY#` items,
# which the write function's table grant covers.
API_ROUTES: tuple[Route, ...] = (
    *(operation.route for operation in OPERATIONS),
    Route("GET", OPENAPI_PATH, "openapi_document", None, "recall", documented=False),
    Route("GET", DOCS_PATH, SWAGGER_UI_OPERATION, None, "recall", documented=False),
    # The inspector: a static page and its assets, no data (a browser cannot send the API key on a page load, so
    # they pass the gateway's authorizer by; every call the page makes carries the key the user enters).
    Route("GET", UI_PATH, "ui_page", None, "recall", documented=False, gateway_authorizer=False),
    Route("GET", f"{UI_PATH}/{{asset}}", "ui_asset", None, "recall", documented=False, gateway_authorizer=False),
)

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
