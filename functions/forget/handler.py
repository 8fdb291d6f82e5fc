"""Lambda `forget`: over HTTP, forget by ids or filter, delete one memory (with cascade), and the namespaces'
retention policies; on its EventBridge schedule, the retention sweep (every namespace's policy). DynamoDB's stream
carries the deletes to the index. The routes are the shared table of rearview.api.routes."""

from rearview.api.lambda_runtime import FunctionRuntime

runtime = FunctionRuntime("forget")
handler = runtime.forget_handler()
