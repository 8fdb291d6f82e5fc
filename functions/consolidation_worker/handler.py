"""Lambda `consolidation_worker` (SQS FIFO consolidation queue): each message is one job from a trigger or the
schedule, run under the namespace's lease and caps within the invocation's time; partial batch responses keep a
namespace's jobs in order; a job that keeps failing goes to the DLQ with its reason."""

from rearview.api.consolidation_lambda import consolidation_job_handler
from rearview.api.lambda_runtime import FunctionRuntime

runtime = FunctionRuntime("consolidation_worker")
handler = consolidation_job_handler(runtime)
