"""Lambda `recall` (HTTP): hybrid recall, get a memory by id, namespace stats. The routes are the shared table of
rearview.api.routes."""

from rearview.api.lambda_runtime import FunctionRuntime

runtime = FunctionRuntime("recall")
handler = runtime.http_handler()
