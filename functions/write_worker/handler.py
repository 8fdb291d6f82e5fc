"""Lambda `write_worker` (SQS write queue): each message is one accepted request, stored with write_batch
(idempotent by id); partial batch responses; a message that keeps failing goes to the DLQ with its reason."""

from rearview.api.lambda_runtime import FunctionRuntime

runtime = FunctionRuntime("write_worker")
handler = runtime.queue_handler()
