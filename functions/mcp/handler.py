"""Lambda `mcp` (HTTP, `POST /mcp`): the MCP server over Streamable HTTP, stateless with JSON responses, in front of
the same services as the HTTP API (writes go onto the write queue). The route is behind the gateway's API-key
authorizer, like the REST routes; the function reads the authorizer's context and checks each tool call's namespace
and permission (see rearview.api.mcp_http). The mcp SDK and the services load on the first invocation."""

from rearview.api.lambda_runtime import FunctionRuntime
from rearview.api.mcp_http import mcp_lambda_handler

runtime = FunctionRuntime("mcp")
handler = mcp_lambda_handler(runtime)
