"""Lambda `index_setup` (CloudFormation custom resource): provisions the search index at deploy with the adapter's own
`ensure_index`, so a new deployment's first recall finds an index (rearview.api.index_setup)."""

from rearview.api.index_setup import index_setup_handler
from rearview.api.lambda_runtime import FunctionRuntime

runtime = FunctionRuntime("index_setup")
handler = index_setup_handler(runtime)
