"""Lambda `index_sync` (DynamoDB Streams): upserts and deletes of episodes and facts follow the table into the
OpenSearch index; working memory, namespace state and API keys are ignored; partial batch failures reported."""

from rearview.api.lambda_runtime import FunctionRuntime
from rearview.api.stream_sync import index_sync_handler

runtime = FunctionRuntime("index_sync")
handler = index_sync_handler(runtime)
