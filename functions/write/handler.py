"""Lambda `write` (HTTP): POST memories and batches (202 accepted onto the write queue) and working memory (stored
at once in DynamoDB). The routes are the shared table of rearview.api.routes."""

from rearview.api.lambda_runtime import FunctionRuntime

runtime = FunctionRuntime("write")
handler = runtime.http_handler()
