"""Lambda `erase` (HTTP): `DELETE /v1/namespaces/{ns}` erases a namespace, or with `subtree=true` every namespace under
it: its memories in every layer, their history, consolidation's ledger, its retention policy, the search index's
documents, and the API keys whose whole scope went. Its role reaches all of them (the table's namespace and key
items, the index) and no other function's does. Each namespace is marked erased first, so a write still in the queue
cannot bring it back; the receipt says what no erase reaches (dead-letter queues, backups)."""

from rearview.api.lambda_runtime import FunctionRuntime

runtime = FunctionRuntime("erase")
handler = runtime.http_handler()
