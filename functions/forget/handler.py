"""Lambda `forget` (HTTP): forget by ids or filter, delete one memory, with cascade. DynamoDB's stream carries the
deletes to the index. The routes are the shared table of rearview.api.routes."""

from rearview.api.lambda_runtime import FunctionRuntime

runtime = FunctionRuntime("forget")
handler = runtime.http_handler()
