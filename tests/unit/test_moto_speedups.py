"""The suite's faster moto answers (support/moto_speedups) are moto's own answers."""

from __future__ import annotations

import copy
from typing import Any

import boto3
import moto.dynamodb.models as dynamodb_models
import pytest
from moto import mock_aws
from moto.core import serialize as moto_serialize
from moto.core.responses import ActionContext
from moto.core.utils import get_service_model
from moto.dynamodb.models.dynamo_type import DynamoType, Item
from moto.dynamodb.responses import DynamoResult
from moto.sqs import models as sqs_models

from support import moto_speedups

pytestmark = pytest.mark.unit

ATTRIBUTES: dict[str, Any] = {
    "pk": {"S": "ns#acme"},
    "sk": {"S": "m#1"},
    "content": {"S": "Booked the 9:40 train"},
    "confidence": {"N": "0.750"},
    "version": {"N": "3"},
    "vec": {"B": b"\x00\x01\x02\x03"},
    "tags": {"SS": ["travel", "work"]},
    "scores": {"NS": ["1", "2.5"]},
    "provenance": {"L": [{"S": "e1"}, {"N": "2"}, {"M": {"a": {"BOOL": True}}}]},
    "meta": {"M": {"source": {"S": "chat"}, "depth": {"M": {"n": {"N": "1"}}}}},
    "pinned": {"BOOL": False},
    "gone": {"NULL": True},
}


def _item() -> Item:
    return Item(hash_key=DynamoType(ATTRIBUTES["pk"]), range_key=DynamoType(ATTRIBUTES["sk"]), attrs=ATTRIBUTES)


@pytest.mark.parametrize(
    "paths",
    [
        [["content"]],
        [[name] for name in ATTRIBUTES],
        [["vec"], ["missing"], ["confidence"], ["vec"]],
        [["missing"]],
        # Nested and indexed paths take moto's own code.
        [["meta", "depth", "n"], ["meta", "source"]],
        [["provenance[1]"], ["content"]],
    ],
)
def test_a_projection_reads_what_motos_own_does(paths: list[list[str]]) -> None:
    expected = moto_speedups._ORIGINAL_PROJECT(_item(), paths)
    projected = moto_speedups._project(_item(), paths)
    assert projected.to_json() == expected.to_json()
    assert (projected.hash_key, projected.range_key) == (expected.hash_key, expected.range_key)


@pytest.mark.parametrize("age_seconds, retention", [(10, 60), (61, 60), (59, 60), (4 * 86400 - 1, None)])
def test_the_retention_check_answers_as_motos_own(age_seconds: int, retention: int | None) -> None:
    backend = sqs_models.SQSBackend("us-east-1", "123456789012")
    attributes: dict[str, Any] = {} if retention is None else {"MessageRetentionPeriod": str(retention)}
    backend.create_queue("q", **attributes)
    message = sqs_models.Message("m1", "body")
    message.sent_timestamp = int((sqs_models.unix_time() - age_seconds) * 1000)  # type: ignore[assignment]
    original = sqs_models.SQSBackend.__dict__["is_message_valid_based_on_retention_period"]
    fast = moto_speedups._is_message_valid_based_on_retention_period
    assert fast(backend, "q", message) == moto_speedups._ORIGINAL_RETENTION_CHECK(backend, "q", message)
    assert original is fast, "installed by tests/conftest.py"


def test_a_transaction_applies_whole_or_rolls_back_whole() -> None:
    with mock_aws():
        client: Any = boto3.client("dynamodb", region_name="us-east-1")
        client.create_table(
            TableName="t",
            KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}],
            AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"}],
            BillingMode="PAY_PER_REQUEST",
        )
        client.put_item(TableName="t", Item={"pk": {"S": "kept"}, "n": {"N": "1"}})
        puts = [{"Put": {"TableName": "t", "Item": {"pk": {"S": f"new-{i}"}}}} for i in range(10)]
        bump: dict[str, Any] = {
            "Update": {
                "TableName": "t",
                "Key": {"pk": {"S": "kept"}},
                "UpdateExpression": "SET n = :two",
                "ConditionExpression": "n = :expected",
                "ExpressionAttributeValues": {":two": {"N": "2"}, ":expected": {"N": "7"}},
            }
        }

        with pytest.raises(client.exceptions.TransactionCanceledException):
            client.transact_write_items(TransactItems=[*puts, bump])
        assert _keys(client) == {"kept"}, "nothing of a cancelled transaction stays"
        assert dynamodb_models.copy is copy, "moto's module is left as it was"

        bump["Update"]["ExpressionAttributeValues"][":expected"] = {"N": "1"}
        client.transact_write_items(TransactItems=[*puts, bump])
        assert _keys(client) == {"kept", *(f"new-{i}" for i in range(10))}
        assert client.get_item(TableName="t", Key={"pk": {"S": "kept"}})["Item"]["n"] == {"N": "2"}
        assert dynamodb_models.DynamoDBBackend.transact_write_items is moto_speedups._transact_write_items


@pytest.mark.parametrize("operation", ["Query", "GetItem", "BatchGetItem", "UpdateItem"])
def test_a_responses_attribute_values_are_written_as_motos_own_writes_them(operation: str) -> None:
    item = _item()
    results = {
        "Query": {"Items": [item.attrs, item.attrs], "Count": 2, "LastEvaluatedKey": {"pk": item.attrs["pk"]}},
        "GetItem": {"Item": item.attrs},
        "BatchGetItem": {"Responses": {"t": [item.attrs]}, "UnprocessedKeys": {}},
        "UpdateItem": {"Attributes": item.attrs},
    }
    model = get_service_model("dynamodb")
    context = ActionContext(model, model.operation_model(operation), moto_serialize.JSONSerializer, None)  # type: ignore[arg-type]
    result = DynamoResult(results[operation])
    assert moto_serialize.BaseJSONSerializer._serialize_type_structure is moto_speedups._serialize_type_structure, (
        "installed by tests/conftest.py"
    )
    fast = result.execute_result(context)
    moto_serialize.BaseJSONSerializer._serialize_type_structure = moto_speedups._ORIGINAL_JSON_STRUCTURE  # type: ignore[method-assign]
    try:
        own = result.execute_result(context)
    finally:
        moto_serialize.BaseJSONSerializer._serialize_type_structure = moto_speedups._serialize_type_structure  # type: ignore[method-assign]
    assert fast == own
    assert '"B": "AAECAw=="' in str(fast[2]) and '"BOOL": true' in str(fast[2])


def _keys(client: Any) -> set[str]:
    return {item["pk"]["S"] for item in client.scan(TableName="t")["Items"]}
