"""What the local server logs of a request, and what it never does.

One line per request: its method, its route's template (`PUT /v1/namespaces/{ns}/sessions/{sid}/working/{key}`),
the status and the time taken. Never the path as sent, the query string, the body or a key: a path segment may be
a working-memory key or an id holding a secret, a query string a token, a body anything (issue 40 found tokens in
the log of every request, refused ones included).

The libraries under the server log more when their loggers are set to DEBUG or INFO: Powertools' event handler the
events and route arguments it resolves, the MCP SDK the messages it handles, uvicorn each request's path and query
string. `quiet_request_content()` adds a filter to those loggers that lets through only their warnings and errors,
which name no request content.
"""

from __future__ import annotations

import logging

from rearview.api.routes import match_api_route

access_logger = logging.getLogger("rearview.api.access")

# The loggers of the libraries that write request content below WARNING.
CONTENT_LOGGERS = (
    "aws_lambda_powertools.event_handler",
    "aws_lambda_powertools.event_handler.api_gateway",
    "aws_lambda_powertools.event_handler.middlewares",
    "aws_lambda_powertools.event_handler.middlewares.openapi_validation",
    "mcp",
    "mcp.server",
    "mcp.server.lowlevel.server",
    "mcp.server.streamable_http",
    "mcp.server.streamable_http_manager",
    "mcp.server.mcpserver",
    "mcp.server.mcpserver.server",
    "mcp.server.mcpserver.tools.tool_manager",
    "uvicorn.access",
    "uvicorn.error",
)


class WarningsOnly(logging.Filter):
    """Passes a record of WARNING or above, drops the rest (the library's debug and info lines carry requests)."""

    def filter(self, record: logging.LogRecord) -> bool:
        return record.levelno >= logging.WARNING


_FILTER = WarningsOnly()


def quiet_request_content() -> None:
    """Filter the libraries' loggers that write request content (idempotent). A filter applies to the records
    created on its own logger, so each logger that writes them is named."""
    for name in CONTENT_LOGGERS:
        logger = logging.getLogger(name)
        if _FILTER not in logger.filters:
            logger.addFilter(_FILTER)


def route_template(method: str, raw_path: str) -> str:
    """`POST /v1/namespaces/{ns}/recall`: the route a request went to, with no value of the request in it."""
    matched = match_api_route(method, raw_path)
    if matched is not None:
        return matched[0].route_key
    if raw_path == "/mcp":
        return f"{method} /mcp"
    return f"{method} (no route)"


def log_request(method: str, raw_path: str, status: int, seconds: float) -> None:
    access_logger.info("%s %d %.0f ms", route_template(method, raw_path), status, seconds * 1000)
