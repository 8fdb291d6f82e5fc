"""Lambda `consolidate`: on the EventBridge schedule, every namespace with unconsolidated episodes; over HTTP, the
consolidate route of one namespace."""

from rearview.api.lambda_runtime import FunctionRuntime

runtime = FunctionRuntime("consolidate")
handler = runtime.consolidate_handler()
