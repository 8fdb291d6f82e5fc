"""Four of moto's answers computed without the work that makes them quadratic or slow, with the same result: the
test suite spent most of its AWS time in them, and none is what a test checks.

- **A projected DynamoDB read** (`GetItem`, `BatchGetItem`, `Query` with a `ProjectionExpression`): moto turns the
  whole item into plain JSON once per projected attribute, so reading the 30 attributes of a memory converts it
  30 times. For a projection of top-level attributes (every projection Rearview sends) this converts each named
  attribute once; a nested or indexed path (`a.b`, `a[0]`) takes moto's own code.
- **A DynamoDB transaction** (`TransactWriteItems`) keeps a copy of each table it writes, to roll back to on
  failure; moto deep-copies the whole table again for every item of the transaction that names it (a transaction
  of 25 writes copies the table 25 times), all before any write. This copies each table once, and serialises
  transactions (moto does not, and the copy-once swaps a name in moto's module for the length of one).
- **A DynamoDB response's attribute values**: moto writes every response through a serializer that walks the
  service's model and, for each member of each `AttributeValue` (ten of them: S, N, B, SS, ..., BOOL), asks six alias
  providers where the value sits on the object. An `AttributeValue` moto answers with is already a dict keyed by its
  members, so this reads each member by its name, and writes it with the serializer's own code; a value of any other
  shape takes moto's own path. It was 45% of the time the write path's fault test spent.
- **The retention check on a received SQS message** asks for the queue's attributes, and moto computes every one
  of them to answer, counting the queue's messages twice, for each message received. This reads the retention
  period alone.

`install()` is idempotent; tests/conftest.py calls it once per process. The emulator's moto (its own process) is
not patched.
"""

from __future__ import annotations

import copy
import re
import threading
from types import SimpleNamespace
from typing import Any

import moto.dynamodb.models as dynamodb_models
from moto.core import serialize as moto_serialize
from moto.dynamodb.models import dynamo_type
from moto.sqs import models as sqs_models

_ORIGINAL_PROJECT = dynamo_type.Item.project
_ORIGINAL_RETENTION_CHECK = sqs_models.SQSBackend.is_message_valid_based_on_retention_period
_ORIGINAL_TRANSACT = dynamodb_models.DynamoDBBackend.transact_write_items
_ORIGINAL_JSON_STRUCTURE = moto_serialize.BaseJSONSerializer._serialize_type_structure
_TRANSACTIONS = threading.RLock()
_INDEXED = re.compile(r".+\[\d+\]$")
_INSTALLED = False


def _project(self: dynamo_type.Item, projection_expressions: list[list[str]]) -> dynamo_type.Item:
    if any(len(path) != 1 or _INDEXED.match(path[0]) for path in projection_expressions):
        return _ORIGINAL_PROJECT(self, projection_expressions)
    result: dict[str, Any] = {}
    for (name,) in projection_expressions:
        if name in self.attrs and name not in result:
            result[name] = dynamo_type.deserializer.deserialize(self.attrs[name].to_regular_json())
    return dynamo_type.Item(
        hash_key=self.hash_key,
        range_key=self.range_key,
        attrs=dict(dynamo_type.serializer.serialize(result)["M"]),
    )


def _transact_write_items(self: dynamodb_models.DynamoDBBackend, transact_items: list[dict[str, Any]]) -> None:
    copies: dict[int, Any] = {}

    def deepcopy(value: Any, memo: dict[int, Any] | None = None) -> Any:
        if isinstance(value, dynamodb_models.Table):
            if id(value) not in copies:
                copies[id(value)] = copy.deepcopy(value, memo)
            return copies[id(value)]
        return copy.deepcopy(value, memo)

    with _TRANSACTIONS:
        dynamodb_models.copy = SimpleNamespace(deepcopy=deepcopy)  # type: ignore[assignment]
        try:
            _ORIGINAL_TRANSACT(self, transact_items)
        finally:
            dynamodb_models.copy = copy


def _is_message_valid_based_on_retention_period(
    self: sqs_models.SQSBackend, queue_name: str, message: sqs_models.Message
) -> bool:
    # Queue sets its attributes by name (`setattr`), MessageRetentionPeriod as an int.
    retention_period: int = getattr(self.get_queue(queue_name), "message_retention_period")  # noqa: B009
    return bool(retention_period + message.sent_timestamp / 1000 > sqs_models.unix_time())  # type: ignore[operator]


def _serialize_type_structure(
    self: moto_serialize.BaseJSONSerializer, serialized: Any, value: Any, shape: Any, key: str
) -> None:
    transformers = getattr(self._value_picker, "response_transformers", None)
    if shape.name != "AttributeValue" or not isinstance(value, dict) or transformers:
        _ORIGINAL_JSON_STRUCTURE(self, serialized, value, shape, key)
        return
    wrapper: Any = self.MAP_TYPE() if key else serialized
    for member_key, member_shape in shape.members.items():
        member_shape.parent = shape
        member_value = value.get(member_key)
        if member_value is not None:
            self._serialize(wrapper, member_value, member_shape, member_key)
    if key:
        self._default_serialize(serialized, wrapper, shape, key)


def install() -> None:
    global _INSTALLED
    if _INSTALLED:
        return
    dynamo_type.Item.project = _project  # type: ignore[method-assign]
    dynamodb_models.DynamoDBBackend.transact_write_items = _transact_write_items  # type: ignore[method-assign]
    sqs_models.SQSBackend.is_message_valid_based_on_retention_period = (  # type: ignore[method-assign]
        _is_message_valid_based_on_retention_period
    )
    moto_serialize.BaseJSONSerializer._serialize_type_structure = _serialize_type_structure  # type: ignore[method-assign]
    _INSTALLED = True
