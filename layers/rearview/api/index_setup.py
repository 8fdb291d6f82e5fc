"""The `index_setup` function: a CloudFormation custom resource that provisions the search index at deploy.

On Create and Update it runs the adapter's own `ensure_index` (create the index with its mapping, or give an existing
one the fields a newer version added; an index of another vector dimension fails the deploy), so a new deployment
answers its first recall from an index that exists. On Delete it leaves the index alone: the collection is kept with
the table, and the index is rebuilt from the table by `rearview reindex` if it is ever dropped.

OpenSearch Serverless applies a new data-access policy after a short delay, so a refusal (403) or an unreachable
endpoint is retried with backoff until `RETRY_MARGIN_SECONDS` before the function's timeout. Whatever happens,
CloudFormation gets an answer (SUCCESS or FAILED with the reason) at the pre-signed `ResponseURL`: a custom resource
that never answers holds the stack for an hour.
"""

from __future__ import annotations

import json
import time
import urllib.request
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from rearview.api.lambda_runtime import logger

if TYPE_CHECKING:
    from rearview.api.lambda_runtime import FunctionRuntime, Handler
    from rearview.ports import IndexMaintenance

# Stop retrying this long before the function's timeout, to leave time to answer CloudFormation.
RETRY_MARGIN_SECONDS = 20.0
BACKOFF_SECONDS = (2.0, 5.0, 10.0, 20.0, 30.0)

Respond = Callable[[Mapping[str, Any], dict[str, Any]], None]


def put_response(event: Mapping[str, Any], body: dict[str, Any]) -> None:
    """PUT the custom resource's answer to CloudFormation's pre-signed S3 URL (no content type: S3 signs none)."""
    data = json.dumps(body).encode("utf-8")
    request = urllib.request.Request(
        str(event["ResponseURL"]),
        data=data,
        method="PUT",
        headers={"Content-Type": "", "Content-Length": str(len(data))},
    )
    with urllib.request.urlopen(request, timeout=30) as answer:  # noqa: S310 - CloudFormation's https URL
        answer.read()


def provision(
    event: Mapping[str, Any],
    maintenance: Callable[[], IndexMaintenance | None],
    remaining_seconds: Callable[[], float],
    sleep: Callable[[float], None] = time.sleep,
) -> dict[str, Any]:
    """What to tell CloudFormation about one custom-resource event: the index ensured (Create, Update), or left alone
    (Delete); FAILED with the last error once the retries run out."""
    properties = event.get("ResourceProperties") or {}
    index_name = str(properties.get("IndexName") or "search-index")
    answer = {
        "StackId": event.get("StackId"),
        "RequestId": event.get("RequestId"),
        "LogicalResourceId": event.get("LogicalResourceId"),
        "PhysicalResourceId": event.get("PhysicalResourceId") or index_name,
        "Status": "SUCCESS",
    }
    if event.get("RequestType") == "Delete":
        return {**answer, "Reason": "the index is kept (rebuild it from the table with rearview reindex)"}
    attempt = 0
    while True:
        try:
            index = maintenance()
            created = None if index is None else index.ensure_index()
        except Exception as exc:
            delay = BACKOFF_SECONDS[min(attempt, len(BACKOFF_SECONDS) - 1)]
            reason = f"{type(exc).__name__}: {exc}"[:500]
            if remaining_seconds() - delay < RETRY_MARGIN_SECONDS:
                logger.exception("search index could not be ensured", extra={"index": index_name})
                return {**answer, "Status": "FAILED", "Reason": reason}
            logger.warning("search index not ensured yet, retrying", extra={"index": index_name, "error": reason})
            sleep(delay)
            attempt += 1
            continue
        if index is None:
            return {**answer, "Reason": "no separate search index on this backend"}
        # Only ensure_index is retried: a failure past it (logging, say) is a bug to surface, not a policy delay.
        logger.info("search index ensured", extra={"index": index_name, "index_created": created})
        return {**answer, "PhysicalResourceId": index_name, "Data": {"Created": str(created).lower()}}


def index_setup_handler(runtime: FunctionRuntime, *, respond: Respond = put_response) -> Handler:
    """The custom resource's handler: provision, then always answer CloudFormation."""

    def maintenance() -> IndexMaintenance | None:
        from rearview.bootstrap import build_index_maintenance

        return build_index_maintenance(runtime.settings)

    @logger.inject_lambda_context(clear_state=True)
    def handler(event: dict[str, Any], context: Any) -> None:
        try:
            answer = provision(event, maintenance, lambda: context.get_remaining_time_in_millis() / 1000)
        except Exception as exc:  # never leave CloudFormation waiting
            logger.exception("custom resource failed")
            answer = {
                "StackId": event.get("StackId"),
                "RequestId": event.get("RequestId"),
                "LogicalResourceId": event.get("LogicalResourceId"),
                "PhysicalResourceId": event.get("PhysicalResourceId") or "search-index",
                "Status": "FAILED",
                "Reason": f"{type(exc).__name__}: {exc}"[:500],
            }
        respond(event, answer)

    return handler
