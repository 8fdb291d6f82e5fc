"""The emulated account's state between runs: the table's items and the queues' messages (dead-letter queues
included, so a dead letter and its reason outlive a restart), written to `<data dir>/state/` when the emulator
stops and put back when it starts against a fresh moto (an external moto that kept its state is left as it is).

moto's server keeps its state in memory only, so the emulator saves it through the same APIs a client uses. A
message comes back with its body, attributes and FIFO group; its receive count starts again. The restored items
are indexed already (the index keeps its own state), so the stream is read from after them.
"""

from __future__ import annotations

import base64
import json
import logging
import os
from pathlib import Path
from typing import Any

from rearview.emulator.resources import Deployment

logger = logging.getLogger(__name__)

_BATCH = 25
_SNAPSHOT_VISIBILITY_SECONDS = 600


def _encode(value: Any) -> Any:
    if isinstance(value, bytes | bytearray):
        return {"__b64__": base64.b64encode(bytes(value)).decode("ascii")}
    if isinstance(value, dict):
        return {k: _encode(v) for k, v in value.items()}
    if isinstance(value, list | set | tuple):
        return [_encode(v) for v in value]
    return value


def _decode(value: Any) -> Any:
    if isinstance(value, dict):
        if set(value) == {"__b64__"}:
            return base64.b64decode(value["__b64__"])
        return {k: _decode(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_decode(v) for v in value]
    return value


def _write(path: Path, data: Any) -> None:
    """Write through a temporary file, so a stop cut short leaves the previous snapshot whole."""
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_suffix(".partial")
    partial.write_text(json.dumps(_encode(data)))
    os.replace(partial, path)


def save(deployment: Deployment, state_dir: Path, dynamodb: Any, sqs: Any) -> dict[str, int]:
    """Write every table's items and every queue's messages; returns counts by kind."""
    items = messages = 0
    for table in deployment.tables.values():
        found: list[dict[str, Any]] = []
        request: dict[str, Any] = {"TableName": table.name, "ConsistentRead": True}
        while True:
            page = dynamodb.scan(**request)
            found.extend(page.get("Items", []))
            if "LastEvaluatedKey" not in page:
                break
            request["ExclusiveStartKey"] = page["LastEvaluatedKey"]
        _write(state_dir / f"table-{table.logical_id}.json", found)
        items += len(found)
    for queue in deployment.queues.values():
        held = _receive_all(sqs, queue.url)
        _write(state_dir / f"queue-{queue.logical_id}.json", held)
        messages += len(held)
    return {"items": items, "messages": messages}


def _receive_all(sqs: Any, url: str) -> list[dict[str, Any]]:
    """Every visible message, received and hidden (the queue is going away with the process)."""
    held: list[dict[str, Any]] = []
    while True:
        response = sqs.receive_message(
            QueueUrl=url,
            MaxNumberOfMessages=10,
            AttributeNames=["All"],
            MessageSystemAttributeNames=["All"],
            MessageAttributeNames=["All"],
            VisibilityTimeout=_SNAPSHOT_VISIBILITY_SECONDS,
        )
        batch = response.get("Messages", [])
        if not batch:
            return held
        for message in batch:
            attributes = message.get("Attributes", {})
            held.append({
                "body": message["Body"],
                "attributes": message.get("MessageAttributes", {}),
                "group": attributes.get("MessageGroupId"),
                "dedup": attributes.get("MessageDeduplicationId"),
            })  # fmt: skip


def restore(deployment: Deployment, state_dir: Path, dynamodb: Any, sqs: Any) -> dict[str, int]:
    """Put back what `save` wrote; returns counts by kind (zero when there is no snapshot)."""
    items = messages = 0
    for table in deployment.tables.values():
        path = state_dir / f"table-{table.logical_id}.json"
        if not path.is_file():
            continue
        found = _decode(json.loads(path.read_text()))
        for start in range(0, len(found), _BATCH):
            requests = [{"PutRequest": {"Item": item}} for item in found[start : start + _BATCH]]
            pending: dict[str, Any] = {table.name: requests}
            while pending:
                pending = dynamodb.batch_write_item(RequestItems=pending).get("UnprocessedItems") or {}
        items += len(found)
    for queue in deployment.queues.values():
        path = state_dir / f"queue-{queue.logical_id}.json"
        if not path.is_file():
            continue
        for message in _decode(json.loads(path.read_text())):
            request: dict[str, Any] = {"QueueUrl": queue.url, "MessageBody": message["body"]}
            if message["attributes"]:
                request["MessageAttributes"] = {
                    name: {k: v for k, v in value.items() if k in ("DataType", "StringValue", "BinaryValue")}
                    for name, value in message["attributes"].items()
                }
            if queue.fifo:
                request["MessageGroupId"] = message["group"] or "restored"
                request["MessageDeduplicationId"] = message["dedup"] or os.urandom(8).hex()
            sqs.send_message(**request)
            messages += 1
    return {"items": items, "messages": messages}
