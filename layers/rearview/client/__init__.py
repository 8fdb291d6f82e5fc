"""The Python client of Rearview's HTTP API, sync and async, on httpx, taking and returning the service's own
pydantic models (the `client` extra: `pip install 'rearview-memory[client]'`).

```python
from rearview.client import RearviewClient

with RearviewClient("http://127.0.0.1:8765", token="rv_...") as rv:
    rv.write("acme:u-42", "The user prefers window seats", layer="semantic", dimension="seat")
    print([hit.content for hit in rv.recall("acme:u-42", "where does the user like to sit?").results])
```

Errors are the domain's exceptions (`rearview.errors.NotFound`, `InvalidInput` with the offending `field`,
`PreconditionFailed` for a stale `if_version` ...), or `ApiError` for the rest; 429 and 503 are retried with
exponential backoff (`Retry`), and a key's spent request limit ends as `Throttled` with its `retry_after`.
"""

from rearview.client.aio import AsyncRearviewClient
from rearview.client.sync import RearviewClient
from rearview.client.transport import ApiError, Retry

__all__ = ["ApiError", "AsyncRearviewClient", "RearviewClient", "Retry"]
