"""Lambda `consolidate`: over HTTP, the consolidate route of one namespace (a run now, under its lease and caps); on
the EventBridge schedule, one job per namespace with unconsolidated episodes onto the consolidation queue, for the
consolidation worker."""

from rearview.api.consolidation_lambda import consolidate_handler
from rearview.api.lambda_runtime import FunctionRuntime

runtime = FunctionRuntime("consolidate")
handler = consolidate_handler(runtime)
