"""The CDK stack, synthesised once per module (placeholder handlers and an empty layer directory: the template
does not depend on their content) and checked through aws_cdk.assertions and the template's JSON."""

from __future__ import annotations

import ast
import fnmatch
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("aws_cdk", reason="the infra extra (aws-cdk-lib, constructs) is not installed")

import aws_cdk as cdk  # noqa: E402
from aws_cdk.assertions import Match  # noqa: E402

from rearview.api.routes import API_ROUTES, MCP_ROUTE, ROUTE_TABLE, Route  # noqa: E402
from rearview_infra.functions import FUNCTION_NAMES, HANDLER, REQUEST_SERVERS, bedrock_model_arns  # noqa: E402
from rearview_infra.layer import LayerNotBuilt  # noqa: E402
from rearview_infra.queues import VISIBILITY_TIMEOUT_FACTOR  # noqa: E402
from rearview_infra.schedule import check_expression  # noqa: E402
from rearview_infra.search import ServerlessVectorCollection  # noqa: E402
from rearview_infra.search_index import RESOURCE_TYPE  # noqa: E402
from rearview_infra.stack import REPO_ROOT, RearviewProps, RearviewStack  # noqa: E402
from support.cdk_stack import (  # noqa: E402
    EMBEDDING_MODEL,
    SUMMARY_MODEL,
    Synthesised,
    as_list,
    placeholder_tree,
    render,
    render_join,
    synthesise,
)

pytestmark = [pytest.mark.infra, pytest.mark.slow]

SEARCHERS = {"write_worker", "recall", "mcp"}
EMBEDDERS = SEARCHERS | {"consolidate", "consolidation_worker"}
TABLE_WRITERS = {"write", "write_worker", "recall", "forget", "erase", "consolidate", "consolidation_worker", "mcp"}
# Deletes: working memory and keys (write), forgetting (forget, mcp), erasing (erase), a run's lease (the consolidating
# functions).
TABLE_DELETERS = {"write", "forget", "erase", "consolidate", "consolidation_worker", "mcp"}
# The functions that detect Hindsight's triggers and send consolidation jobs.
JOB_SENDERS = {"write", "write_worker", "index_sync", "consolidate", "mcp"}
WRITE_ACTIONS = {"dynamodb:PutItem", "dynamodb:UpdateItem"}
DELETE_ACTIONS = {"dynamodb:DeleteItem", "dynamodb:BatchWriteItem"}


@pytest.fixture(scope="module", autouse=True)
def _no_aws_credentials() -> Iterator[None]:
    """Synthesis must not need an account: the credential variables are gone for the whole module."""
    with pytest.MonkeyPatch.context() as patch:
        for variable in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE"):
            patch.delenv(variable, raising=False)
        patch.setenv("AWS_CONFIG_FILE", "/nonexistent")
        patch.setenv("AWS_SHARED_CREDENTIALS_FILE", "/nonexistent")
        yield


@pytest.fixture(scope="module")
def synth(tmp_path_factory: pytest.TempPathFactory) -> Synthesised:
    return synthesise(placeholder_tree(tmp_path_factory.mktemp("tree")))


# --- storage ---------------------------------------------------------------------------------------------


def test_table_keys_ttl_stream_billing_and_retention(synth: Synthesised) -> None:
    synth.template.resource_count_is("AWS::DynamoDB::Table", 1)
    synth.template.has_resource(
        "AWS::DynamoDB::Table",
        {
            "DeletionPolicy": "Retain",
            "UpdateReplacePolicy": "Retain",
            "Properties": Match.object_like(
                {
                    "KeySchema": [
                        {"AttributeName": "pk", "KeyType": "HASH"},
                        {"AttributeName": "sk", "KeyType": "RANGE"},
                    ],
                    "BillingMode": "PAY_PER_REQUEST",
                    "TimeToLiveSpecification": {"AttributeName": "ttl", "Enabled": True},
                    "StreamSpecification": {"StreamViewType": "NEW_AND_OLD_IMAGES"},
                    "PointInTimeRecoverySpecification": {"PointInTimeRecoveryEnabled": True},
                }
            ),
        },
    )


def test_table_global_secondary_indexes(synth: Synthesised) -> None:
    table = synth.resources[synth.id_of(synth.stack.storage.table)]["Properties"]
    indexes = {gsi["IndexName"]: gsi for gsi in table["GlobalSecondaryIndexes"]}
    assert set(indexes) == {"by_time", "by_created", "unconsolidated", "by_namespace", "expiring"}
    assert indexes["unconsolidated"]["KeySchema"] == [
        {"AttributeName": "uc_pk", "KeyType": "HASH"},
        {"AttributeName": "uc_sk", "KeyType": "RANGE"},
    ]
    assert indexes["expiring"]["KeySchema"] == [
        {"AttributeName": "exp_pk", "KeyType": "HASH"},
        {"AttributeName": "exp_sk", "KeyType": "RANGE"},
    ]
    assert all(gsi["Projection"] == {"ProjectionType": "KEYS_ONLY"} for gsi in indexes.values())


def test_table_matches_what_the_dynamodb_store_expects(synth: Synthesised) -> None:
    """The deployed keys and indexes are the adapter's own `table_definition` (what its moto tests create)."""
    from rearview.adapters.dynamodb import TTL_ATTRIBUTE, table_definition

    expected = table_definition("any")
    table = synth.resources[synth.id_of(synth.stack.storage.table)]["Properties"]
    assert table["KeySchema"] == expected["KeySchema"]

    def by_name(items: list[dict[str, Any]], key: str) -> dict[str, Any]:
        return {item[key]: item for item in items}

    assert by_name(table["AttributeDefinitions"], "AttributeName") == by_name(
        expected["AttributeDefinitions"], "AttributeName"
    )
    assert by_name(table["GlobalSecondaryIndexes"], "IndexName") == by_name(
        expected["GlobalSecondaryIndexes"], "IndexName"
    )
    assert table["StreamSpecification"]["StreamViewType"] == expected["StreamSpecification"]["StreamViewType"]
    assert table["TimeToLiveSpecification"]["AttributeName"] == TTL_ATTRIBUTE


# --- queues ----------------------------------------------------------------------------------------------


def test_write_queue_redrives_to_its_dlq_after_five_receives(synth: Synthesised) -> None:
    queues = synth.stack.queues
    queue = synth.resources[synth.id_of(queues.queue)]["Properties"]
    assert queue["RedrivePolicy"] == {
        "deadLetterTargetArn": synth.arn_of(queues.dead_letter_queue),
        "maxReceiveCount": 5,
    }
    assert queue["SqsManagedSseEnabled"] is True
    worker_timeout = synth.function("write_worker")["Timeout"]
    assert queue["VisibilityTimeout"] == VISIBILITY_TIMEOUT_FACTOR * worker_timeout
    # The worker moves a message to the DLQ itself on the last receive, so it must know the same number.
    assert synth.env("write_worker")["REARVIEW_AWS__MAX_RECEIVE_COUNT"] == "5"
    assert synth.env("write_worker")["REARVIEW_AWS__DEAD_LETTER_QUEUE_URL"] == {
        "Ref": synth.id_of(queues.dead_letter_queue)
    }


def test_the_consolidation_queue_is_fifo_per_namespace_and_redrives_to_a_fifo_dlq(synth: Synthesised) -> None:
    queues = synth.stack.consolidation_queues
    queue = synth.resources[synth.id_of(queues.queue)]["Properties"]
    dlq = synth.resources[synth.id_of(queues.dead_letter_queue)]["Properties"]
    assert queue["FifoQueue"] is True and dlq["FifoQueue"] is True
    # The senders set the deduplication id (repeated triggers fold); each namespace is its own message group.
    assert queue.get("ContentBasedDeduplication", False) is False
    assert (queue["DeduplicationScope"], queue["FifoThroughputLimit"]) == ("messageGroup", "perMessageGroupId")
    assert queue["RedrivePolicy"] == {
        "deadLetterTargetArn": synth.arn_of(queues.dead_letter_queue),
        "maxReceiveCount": 5,
    }
    worker = synth.function("consolidation_worker")
    assert queue["VisibilityTimeout"] == VISIBILITY_TIMEOUT_FACTOR * worker["Timeout"]
    env = synth.env("consolidation_worker")
    assert env["REARVIEW_AWS__CONSOLIDATION_MAX_RECEIVE_COUNT"] == "5"
    assert env["REARVIEW_AWS__CONSOLIDATION_DEAD_LETTER_QUEUE_URL"] == {"Ref": synth.id_of(queues.dead_letter_queue)}
    assert "REARVIEW_AWS__CONSOLIDATION_QUEUE_URL" not in env  # the worker runs jobs, it sends none


def test_the_consolidation_worker_outlives_no_lease_and_keeps_a_safety_margin(synth: Synthesised) -> None:
    from rearview.service.hindsight.runner import LEASE_SECONDS
    from rearview.settings import AwsSettings

    timeout = synth.function("consolidation_worker")["Timeout"]
    assert AwsSettings().consolidation_safety_seconds < timeout < LEASE_SECONDS


def test_every_queue_is_encrypted_and_refuses_plain_http(synth: Synthesised) -> None:
    queues = [r for r in synth.resources.values() if r["Type"] == "AWS::SQS::Queue"]
    # write, its DLQ, index sync's failures; consolidation, its DLQ; the two schedule targets' DLQs
    assert len(queues) == 7
    assert all(q["Properties"]["SqsManagedSseEnabled"] is True for q in queues)
    policies = [r for r in synth.resources.values() if r["Type"] == "AWS::SQS::QueuePolicy"]
    denies = [
        st
        for p in policies
        for st in p["Properties"]["PolicyDocument"]["Statement"]
        if st["Effect"] == "Deny" and st["Condition"] == {"Bool": {"aws:SecureTransport": "false"}}
    ]
    assert len(denies) == 7


# --- functions -------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", FUNCTION_NAMES)
def test_function_runtime_handler_layer_and_environment(synth: Synthesised, name: str) -> None:
    fn = synth.function(name)
    assert fn["Runtime"] == "python3.13"
    assert fn["Architectures"] == ["arm64"]
    assert fn["Handler"] == HANDLER == "handler.handler"
    assert fn["Layers"] == [{"Ref": synth.id_of(synth.stack.layer.layer)}]
    assert fn["TracingConfig"] == {"Mode": "Active"}
    synth.template.has_resource_properties(
        "AWS::Lambda::LayerVersion",
        {"CompatibleArchitectures": ["arm64"], "CompatibleRuntimes": ["python3.13"]},
    )
    env = fn["Environment"]["Variables"]
    assert env["REARVIEW_BACKEND"] == "aws"
    assert env["REARVIEW_EMBEDDER"] == "bedrock"
    assert env["REARVIEW_AWS__TABLE_NAME"] == {"Ref": synth.id_of(synth.stack.storage.table)}
    collection_id = synth.stack.get_logical_id(synth.collection().collection)
    assert env["REARVIEW_AWS__OPENSEARCH_ENDPOINT"] == {"Fn::GetAtt": [collection_id, "CollectionEndpoint"]}
    assert env["REARVIEW_AWS__OPENSEARCH_SERVICE"] == "aoss"
    assert env["REARVIEW_AWS__BEDROCK_EMBEDDING_MODEL"] == EMBEDDING_MODEL
    assert env["REARVIEW_AWS__BEDROCK_INDUCTION_MODEL"] == SUMMARY_MODEL
    assert env["POWERTOOLS_SERVICE_NAME"] == f"rearview-{name}"
    # HTTP functions answer within API Gateway's 30 s integration timeout; consolidate also has the hourly
    # run over every namespace, which needs longer (over HTTP it consolidates one namespace).
    if name != "consolidate" and any(route.function == name for route in ROUTE_TABLE):
        assert fn["Timeout"] < 30


def test_only_the_senders_are_told_the_write_queue(synth: Synthesised) -> None:
    told = {name for name in FUNCTION_NAMES if "REARVIEW_AWS__WRITE_QUEUE_URL" in synth.env(name)}
    assert told == {"write", "mcp"}
    assert synth.env("write")["REARVIEW_AWS__WRITE_QUEUE_URL"] == {"Ref": synth.id_of(synth.stack.queues.queue)}


def test_every_rearview_variable_is_a_setting_the_functions_read(
    synth: Synthesised, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The stack's REARVIEW_* names must be fields of rearview.settings (unknown nested keys are silently
    ignored, so a misspelt one would leave the default in force), and the values must validate."""
    from rearview.settings import Settings

    for name in FUNCTION_NAMES:
        for key, value in synth.env(name).items():
            if not key.startswith("REARVIEW_"):
                continue
            field = key.removeprefix("REARVIEW_").lower()
            group, _, nested = field.partition("__")
            assert group in Settings.model_fields, f"{name}: {key} is not a setting"
            if nested:
                model = Settings.model_fields[group].annotation
                assert isinstance(model, type) and nested in model.model_fields, f"{name}: {key} is not a setting"
            monkeypatch.setenv(key, value if isinstance(value, str) else f"https://placeholder-{field}")
        settings = Settings()
        assert settings.backend == "aws" and settings.embedder == "bedrock"
        assert settings.aws.opensearch_service == "aoss"
        assert settings.hindsight.schedule_hours == 24


def test_worker_consumes_the_write_queue_with_partial_batch_responses(synth: Synthesised) -> None:
    synth.template.has_resource_properties(
        "AWS::Lambda::EventSourceMapping",
        {
            "EventSourceArn": synth.arn_of(synth.stack.queues.queue),
            "FunctionName": synth.alias_name("write_worker"),
            "FunctionResponseTypes": ["ReportBatchItemFailures"],
            "BatchSize": 10,
        },
    )


def test_index_sync_reads_the_stream_with_bisect_retries_and_on_failure_queue(synth: Synthesised) -> None:
    table_id = synth.id_of(synth.stack.storage.table)
    synth.template.has_resource_properties(
        "AWS::Lambda::EventSourceMapping",
        {
            "EventSourceArn": {"Fn::GetAtt": [table_id, "StreamArn"]},
            "FunctionName": synth.alias_name("index_sync"),
            "FunctionResponseTypes": ["ReportBatchItemFailures"],
            "BisectBatchOnFunctionError": True,
            "MaximumRetryAttempts": 5,
            "MaximumRecordAgeInSeconds": Match.any_value(),
            "StartingPosition": "TRIM_HORIZON",
            "DestinationConfig": {"OnFailure": {"Destination": synth.arn_of(synth.stack.queues.index_failures)}},
        },
    )


def test_index_sync_receives_episodes_facts_and_working_memory_the_ttl_removed(synth: Synthesised) -> None:
    mappings = [
        r["Properties"]
        for r in synth.resources.values()
        if r["Type"] == "AWS::Lambda::EventSourceMapping" and "StartingPosition" in r["Properties"]
    ]
    (mapping,) = mappings
    patterns = [json.loads(f["Pattern"]) for f in mapping["FilterCriteria"]["Filters"]]
    memories = [p for p in patterns if set(p) == {"dynamodb"}]
    assert sorted(p["dynamodb"]["Keys"]["sk"]["S"][0]["prefix"] for p in memories) == ["EP#", "FACT#"]
    # Working memory only when DynamoDB's TTL removed it (a session that timed out), nothing else new.
    (expiry,) = [p for p in patterns if p not in memories]
    assert expiry == {
        "eventName": ["REMOVE"],
        "userIdentity": {"type": ["Service"], "principalId": ["dynamodb.amazonaws.com"]},
        "dynamodb": {"Keys": {"sk": {"S": [{"prefix": "WM#"}]}}},
    }


# --- least privilege -------------------------------------------------------------------------------------


def test_only_write_and_mcp_can_send_to_the_write_queue(synth: Synthesised) -> None:
    queues = synth.stack.queues
    assert synth.holders("sqs:SendMessage", synth.arn_of(queues.queue)) == {"write", "mcp"}
    assert synth.holders("sqs:SendMessage", synth.arn_of(queues.dead_letter_queue)) == {"write_worker"}
    assert synth.holders("sqs:SendMessage", synth.arn_of(queues.index_failures)) == {"index_sync"}
    assert "sqs:SendMessage" not in synth.actions("recall")
    assert synth.holders("sqs:ReceiveMessage", synth.arn_of(queues.queue)) == {"write_worker"}


def test_the_trigger_detecting_functions_send_consolidation_jobs_and_only_the_worker_takes_them(
    synth: Synthesised,
) -> None:
    queues = synth.stack.consolidation_queues
    assert synth.holders("sqs:SendMessage", synth.arn_of(queues.queue)) == JOB_SENDERS
    told = {name for name in FUNCTION_NAMES if "REARVIEW_AWS__CONSOLIDATION_QUEUE_URL" in synth.env(name)}
    assert told == JOB_SENDERS
    assert synth.env("write_worker")["REARVIEW_AWS__CONSOLIDATION_QUEUE_URL"] == {"Ref": synth.id_of(queues.queue)}
    assert synth.holders("sqs:ReceiveMessage", synth.arn_of(queues.queue)) == {"consolidation_worker"}
    assert synth.holders("sqs:SendMessage", synth.arn_of(queues.dead_letter_queue)) == {"consolidation_worker"}


def test_the_worker_takes_one_job_at_a_time_with_bounded_concurrency(synth: Synthesised) -> None:
    synth.template.has_resource_properties(
        "AWS::Lambda::EventSourceMapping",
        {
            "EventSourceArn": synth.arn_of(synth.stack.consolidation_queues.queue),
            "FunctionName": synth.alias_name("consolidation_worker"),
            "FunctionResponseTypes": ["ReportBatchItemFailures"],
            "BatchSize": 1,
            "ScalingConfig": {"MaximumConcurrency": 5},
        },
    )


def test_table_writes_only_where_needed_and_index_sync_only_reads(synth: Synthesised) -> None:
    table_arn = synth.arn_of(synth.stack.storage.table)
    for action in WRITE_ACTIONS:
        assert synth.holders(action, table_arn) == TABLE_WRITERS, action
    for action in DELETE_ACTIONS:
        assert synth.holders(action, table_arn) == TABLE_DELETERS, action
    # Only the key routes and the erase (it revokes keys) list keys (a filtered Scan); no function scans memories.
    assert synth.holders("dynamodb:Scan", table_arn) == {"write", "erase"}
    stream_arn = {"Fn::GetAtt": [synth.id_of(synth.stack.storage.table), "StreamArn"]}
    assert synth.holders("dynamodb:GetRecords", stream_arn) == {"index_sync"}
    # Index sync reads for Hindsight's triggers (the unconsolidated count, recent outcomes) and never writes.
    index_sync = {a for a in synth.actions("index_sync") if a.startswith("dynamodb:")}
    assert {"dynamodb:Query", "dynamodb:BatchGetItem"} <= index_sync
    assert not index_sync & (WRITE_ACTIONS | DELETE_ACTIONS | {"dynamodb:Scan"})
    assert "index_sync" in synth.holders("dynamodb:Query", table_arn)
    assert not any(a.startswith("dynamodb:") for a in synth.actions("index_setup"))


def test_table_statements_reach_only_their_partition_keys(synth: Synthesised) -> None:
    """LeadingKeys: the data functions reach namespaces, the unconsolidated shards and the embedder record; only
    the key functions reach API keys; only the functions that serve requests reach the keys' request counters."""
    for name in FUNCTION_NAMES:
        for st in synth.statements(name):
            actions = as_list(st["Action"])
            if not any(a.startswith("dynamodb:") and a not in STREAM_ACTIONS for a in actions):
                continue
            leading = st["Condition"]["ForAllValues:StringLike"]["dynamodb:LeadingKeys"]
            data = ["NS#*", "UC#*", "META", "RETENTION", "NAMESPACES", "EXP#*"]
            if name == "authorizer":
                assert leading == ["APIKEY#*"]
            elif name in ("write", "erase"):
                assert leading == [*data, "APIKEY#*", "QUOTA#*"], name
            elif name in REQUEST_SERVERS:
                assert leading == [*data, "QUOTA#*"], name
            else:
                assert leading == data, name


def test_every_function_that_serves_requests_may_count_them() -> None:
    """Per-key throttling counts in every function behind an authenticated route or /mcp: each holds UpdateItem
    on the counters' partitions (a function missing here would answer 500 to every request on AWS)."""
    from rearview.adapters.dynamodb.quota import QUOTA_PK_PREFIX
    from rearview_infra.functions import TABLE_ACTIONS, leading_keys

    served = {route.function for route in ROUTE_TABLE if route.permission is not None or route is MCP_ROUTE}
    assert set(REQUEST_SERVERS) == served == {"write", "recall", "forget", "erase", "consolidate", "mcp"}
    for name in served:
        assert "dynamodb:UpdateItem" in TABLE_ACTIONS[name]
        assert any(fnmatch.fnmatchcase(QUOTA_PK_PREFIX + "0123456789abcdef", k) for k in leading_keys(name)), name
    for name in set(TABLE_ACTIONS) - served:
        assert not any(k.startswith("QUOTA") for k in leading_keys(name)), name


def test_the_data_functions_reach_every_partition_the_store_uses() -> None:
    """A partition the DynamoDB adapters read or write beside the namespaces' must be in the data functions'
    LeadingKeys, or IAM refuses it on AWS (moto does not check IAM, so only this test can tell)."""
    from rearview.adapters.dynamodb.retention_policies import RETENTION_PK
    from rearview.adapters.dynamodb.table import META_KEY, NAMESPACES_PK, namespace_pk, uc_shard
    from rearview_infra.functions import DATA_LEADING_KEYS

    meta = META_KEY["pk"]["S"]
    for key in (RETENTION_PK, NAMESPACES_PK, meta, namespace_pk("acme:u-1"), uc_shard("acme:u-1")):
        assert any(fnmatch.fnmatchcase(key, pattern) for pattern in DATA_LEADING_KEYS), key


STREAM_ACTIONS = {
    "dynamodb:ListStreams",
    "dynamodb:DescribeStream",
    "dynamodb:GetRecords",
    "dynamodb:GetShardIterator",
}


def test_authorizer_reads_api_key_items_only(synth: Synthesised) -> None:
    statements = synth.statements("authorizer")
    dynamo = [st for st in statements if any(a.startswith("dynamodb:") for a in as_list(st["Action"]))]
    assert dynamo, "the authorizer must read API keys"
    for st in dynamo:
        assert set(st["Action"]) <= {"dynamodb:GetItem", "dynamodb:BatchGetItem", "dynamodb:Query"}
        assert st["Condition"] == {"ForAllValues:StringLike": {"dynamodb:LeadingKeys": ["APIKEY#*"]}}
    assert synth.actions("authorizer") - {a for st in dynamo for a in st["Action"]} <= {
        "xray:PutTraceSegments",
        "xray:PutTelemetryRecords",
    }


def test_search_access_iam_and_data_access_policy(synth: Synthesised) -> None:
    collection = synth.collection().collection
    collection_arn = {"Fn::GetAtt": [synth.stack.get_logical_id(collection), "Arn"]}
    assert synth.holders("aoss:APIAccessAll", collection_arn) == SEARCHERS | {"index_sync", "index_setup", "erase"}
    policy = synth.resources[synth.stack.get_logical_id(synth.collection().access_policy)]["Properties"]
    statements = json.loads(render_join(policy["Policy"]))
    by_description = {st["Description"]: st for st in statements}
    writers = by_description["index sync: maintain the index"]
    readers = by_description["functions that search"]
    assert writers["Principal"] == [f"@{synth.role_id('index_sync')}"]
    assert sorted(readers["Principal"]) == sorted(f"@{synth.role_id(n)}" for n in SEARCHERS)
    (reader_index_rule,) = [r for r in readers["Rules"] if r["ResourceType"] == "index"]
    assert "aoss:WriteDocument" not in reader_index_rule["Permission"]
    (writer_index_rule,) = [r for r in writers["Rules"] if r["ResourceType"] == "index"]
    assert {"aoss:CreateIndex", "aoss:WriteDocument"} <= set(writer_index_rule["Permission"])
    assert "aoss:DeleteIndex" not in writer_index_rule["Permission"]
    creators = by_description["index setup: create the index at deploy"]
    assert creators["Principal"] == [f"@{synth.role_id('index_setup')}"]
    (creator_index_rule,) = [r for r in creators["Rules"] if r["ResourceType"] == "index"]
    assert set(creator_index_rule["Permission"]) == {"aoss:DescribeIndex", "aoss:CreateIndex", "aoss:UpdateIndex"}
    erasers = by_description["erase: delete a namespace's documents"]
    assert erasers["Principal"] == [f"@{synth.role_id('erase')}"]
    (eraser_index_rule,) = [r for r in erasers["Rules"] if r["ResourceType"] == "index"]
    assert set(eraser_index_rule["Permission"]) == {"aoss:DescribeIndex", "aoss:ReadDocument", "aoss:WriteDocument"}
    assert set(by_description) == {
        "index sync: maintain the index",
        "erase: delete a namespace's documents",
        "index setup: create the index at deploy",
        "functions that search",
    }


def test_the_data_access_policy_covers_every_function_that_calls_the_index(synth: Synthesised) -> None:
    """OpenSearch authorises a second time, by the collection's data-access policy, which no emulator checks: so
    here, statically. Who calls the index is read from what each function runs: the routes answered by recall
    (recall, brief), the MCP function (its recall and brief tools), the write worker (the write path's
    near-duplicate search), index sync (keeps it in step), the erase (deletes a namespace's documents) and index_setup
    (creates it)."""
    policy = synth.resources[synth.stack.get_logical_id(synth.collection().access_policy)]["Properties"]
    granted: dict[str, set[str]] = {}
    for statement in json.loads(render_join(policy["Policy"])):
        (index_rule,) = [r for r in statement["Rules"] if r["ResourceType"] == "index"]
        for principal in statement["Principal"]:
            granted.setdefault(principal, set()).update(index_rule["Permission"])
    searching = {route.function for route in API_ROUTES if route.operation in ("recall", "brief")}
    reading = {"aoss:DescribeIndex", "aoss:ReadDocument"}
    needs: dict[str, set[str]] = dict.fromkeys({*searching, MCP_ROUTE.function}, reading)
    needs["write_worker"] = {"aoss:DescribeIndex", "aoss:ReadDocument"}
    needs["index_sync"] = {"aoss:ReadDocument", "aoss:WriteDocument", "aoss:CreateIndex", "aoss:UpdateIndex"}
    needs["erase"] = {"aoss:ReadDocument", "aoss:WriteDocument"}
    needs["index_setup"] = {"aoss:DescribeIndex", "aoss:CreateIndex", "aoss:UpdateIndex"}
    erase_route = next(route for route in API_ROUTES if route.operation == "erase_namespace")
    assert erase_route.function == "erase"
    for name, permissions in needs.items():
        held = granted.get(f"@{synth.role_id(name)}", set())
        assert permissions <= held, f"{name} calls the index without {sorted(permissions - held)}"
    for name in FUNCTION_NAMES:
        if name not in needs:
            assert f"@{synth.role_id(name)}" not in granted, f"{name} never calls the index"


def test_search_admin_principals_get_their_own_statement(tmp_path: Path) -> None:
    admin = "arn:aws:iam::123456789012:role/rearview-operator"
    props = RearviewProps(**{**placeholder_tree(tmp_path).__dict__, "search_admin_principals": (admin,)})
    stack = RearviewStack(cdk.App(), "WithAdmin", props=props)
    assert isinstance(stack.search, ServerlessVectorCollection)
    (admin_statement,) = [st for st in stack.search.data_access_rules() if admin in st["Principal"]]
    assert admin_statement["Principal"] == [admin]
    (index_rule,) = [r for r in admin_statement["Rules"] if r["ResourceType"] == "index"]
    assert "aoss:DeleteIndex" in index_rule["Permission"]


def test_collection_is_vectorsearch_with_encryption_and_network_policies(synth: Synthesised) -> None:
    synth.template.has_resource_properties("AWS::OpenSearchServerless::Collection", {"Type": "VECTORSEARCH"})
    policies = {
        r["Properties"]["Type"]: r["Properties"]
        for r in synth.resources.values()
        if r["Type"] == "AWS::OpenSearchServerless::SecurityPolicy"
    }
    assert set(policies) == {"encryption", "network"}
    assert json.loads(policies["encryption"]["Policy"])["AWSOwnedKey"] is True
    collection = synth.resources[synth.stack.get_logical_id(synth.collection().collection)]
    assert len(collection["DependsOn"]) == 2


def test_bedrock_models_granted_to_their_users_only(synth: Synthesised) -> None:
    def granted(name: str) -> list[Any]:
        statements = [st for st in synth.statements(name) if "bedrock:InvokeModel" in as_list(st["Action"])]
        return [resource for st in statements for resource in as_list(st["Resource"])]

    embedding_arn = render(bedrock_model_arns(EMBEDDING_MODEL)[0])
    summary_arns = [render(arn) for arn in bedrock_model_arns(SUMMARY_MODEL)]
    for name in FUNCTION_NAMES:
        resources = [render(r) for r in granted(name)]
        assert (embedding_arn in resources) == (name in EMBEDDERS), name
        # The consolidation worker gets the induction model only with the bedrock inducer (the next test).
        assert all(arn in resources for arn in summary_arns) == (name in {"consolidate", "mcp"}), name
        assert all(r in [embedding_arn, *summary_arns] for r in resources), name
    assert not any("REARVIEW_INDUCER" in synth.env(name) for name in FUNCTION_NAMES)


def test_the_bedrock_inducer_is_named_to_the_consolidating_functions_and_granted_to_the_worker(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    base = placeholder_tree(tmp_path_factory.mktemp("inducer"))
    props = RearviewProps(**{**base.__dict__, "inducer": "bedrock"})
    inducing = synthesise(props)
    summary_arns = [render(arn) for arn in bedrock_model_arns(SUMMARY_MODEL)]
    invoked = [
        render(r)
        for st in inducing.statements("consolidation_worker")
        if "bedrock:InvokeModel" in as_list(st["Action"])
        for r in as_list(st["Resource"])
    ]
    assert all(arn in invoked for arn in summary_arns)
    named = {name for name in FUNCTION_NAMES if inducing.env(name).get("REARVIEW_INDUCER") == "bedrock"}
    assert named == {"consolidate", "consolidation_worker", "mcp"}


def test_a_rerank_model_is_granted_and_named_to_the_recalling_functions_only(
    tmp_path_factory: pytest.TempPathFactory, synth: Synthesised
) -> None:
    assert not any("REARVIEW_RERANKER" in synth.env(name) for name in FUNCTION_NAMES)
    assert not any("bedrock:Rerank" in synth.actions(name) for name in FUNCTION_NAMES)
    base = placeholder_tree(tmp_path_factory.mktemp("rerank"))
    props = RearviewProps.from_context(
        {"rearview:rerankModel": "amazon.rerank-v1:0"}.get,
        functions_dir=base.functions_dir,
        layer_dir=base.layer_dir,
        embedding_model=EMBEDDING_MODEL,
        summary_model=SUMMARY_MODEL,
    )
    reranking = synthesise(props)
    (rerank_arn,) = (render(arn) for arn in bedrock_model_arns("amazon.rerank-v1:0"))
    for name in FUNCTION_NAMES:
        env = reranking.env(name)
        recalls = name in {"recall", "mcp"}
        assert (env.get("REARVIEW_RERANKER"), env.get("REARVIEW_AWS__BEDROCK_RERANK_MODEL")) == (
            ("bedrock", "amazon.rerank-v1:0") if recalls else (None, None)
        ), name
        rerank = [st for st in reranking.statements(name) if "bedrock:Rerank" in as_list(st["Action"])]
        # Rerank takes no resource; the model itself is authorised as InvokeModel on its ARN.
        assert [(as_list(st["Action"]), as_list(st["Resource"])) for st in rerank] == (
            [(["bedrock:Rerank"], ["*"])] if recalls else []
        ), name
        invoked = [
            render(r)
            for st in reranking.statements(name)
            if "bedrock:InvokeModel" in as_list(st["Action"])
            for r in as_list(st["Resource"])
        ]
        assert (rerank_arn in invoked) == recalls, name
    assert reranking.env("write")["REARVIEW_AWS__WRITE_QUEUE_URL"]  # the other variables are untouched


def test_inference_profiles_grant_the_profile_and_its_foundation_model() -> None:
    arns = bedrock_model_arns("eu.anthropic.claude-3-5-haiku-20241022-v1:0")
    profile, model = (render(arn) for arn in arns)
    assert profile.endswith(":inference-profile/eu.anthropic.claude-3-5-haiku-20241022-v1:0")
    assert model.endswith(":bedrock:*::foundation-model/anthropic.claude-3-5-haiku-20241022-v1:0")
    (plain,) = bedrock_model_arns(EMBEDDING_MODEL)
    assert render(plain).endswith("::foundation-model/amazon.titan-embed-text-v2:0")


def test_no_function_gets_wildcard_resources_beyond_xray_and_list_streams(synth: Synthesised) -> None:
    allowed_on_star = {"xray:PutTraceSegments", "xray:PutTelemetryRecords", "dynamodb:ListStreams"}
    for name in FUNCTION_NAMES:
        for st in synth.statements(name):
            if "*" in as_list(st["Resource"]):
                assert set(as_list(st["Action"])) <= allowed_on_star, (name, st)
            assert not any(a.endswith(":*") or a == "*" for a in as_list(st["Action"])), (name, st)


# --- HTTP API --------------------------------------------------------------------------------------------


def _routes(synth: Synthesised) -> dict[str, dict[str, Any]]:
    return {
        r["Properties"]["RouteKey"]: r["Properties"]
        for r in synth.resources.values()
        if r["Type"] == "AWS::ApiGatewayV2::Route"
    }


def test_the_deployed_routes_are_the_route_table(synth: Synthesised) -> None:
    assert set(_routes(synth)) == {route.route_key for route in ROUTE_TABLE}
    assert MCP_ROUTE in ROUTE_TABLE and set(API_ROUTES) < set(ROUTE_TABLE)


@pytest.mark.parametrize("route", ROUTE_TABLE, ids=lambda route: route.route_key)
def test_each_route_reaches_its_function(synth: Synthesised, route: Route) -> None:
    target = _routes(synth)[route.route_key]["Target"]["Fn::Join"][1][1]["Ref"]
    integration = synth.resources[target]["Properties"]
    assert integration["IntegrationType"] == "AWS_PROXY"
    assert integration["PayloadFormatVersion"] == "2.0"
    # The alias: what CodeDeploy shifts is what the API calls.
    assert integration["IntegrationUri"] == synth.alias_arn(route.function)


@pytest.mark.parametrize("route", ROUTE_TABLE, ids=lambda route: route.route_key)
def test_each_route_is_behind_the_authorizer_unless_the_table_says_otherwise(synth: Synthesised, route: Route) -> None:
    (authorizer_id,) = [k for k, r in synth.resources.items() if r["Type"] == "AWS::ApiGatewayV2::Authorizer"]
    deployed = _routes(synth)[route.route_key]
    if route.gateway_authorizer:
        assert deployed["AuthorizationType"] == "CUSTOM"
        assert deployed["AuthorizerId"] == {"Ref": authorizer_id}
    else:
        assert deployed["AuthorizationType"] == "NONE"
        assert "AuthorizerId" not in deployed


def test_only_health_and_the_inspector_files_skip_the_authorizer() -> None:
    # POST /mcp too is authorised at the gateway: an unauthenticated flood never starts the MCP function. The
    # inspector's page and script hold no data and a browser cannot send a key to load them; every API call they
    # make carries one.
    assert {route.route_key for route in ROUTE_TABLE if not route.gateway_authorizer} == {
        "GET /v1/health",
        "GET /ui",
        "GET /ui/{asset}",
    }
    assert MCP_ROUTE.function == "mcp" and MCP_ROUTE.gateway_authorizer


def test_authorizer_is_a_cached_simple_lambda_authorizer(synth: Synthesised) -> None:
    authorizer_arn = synth.alias_arn("authorizer")
    synth.template.has_resource_properties(
        "AWS::ApiGatewayV2::Authorizer",
        {
            "AuthorizerType": "REQUEST",
            "EnableSimpleResponses": True,
            "AuthorizerPayloadFormatVersion": "2.0",
            "IdentitySource": ["$request.header.Authorization"],
            "AuthorizerResultTtlInSeconds": 300,
            "AuthorizerUri": Match.object_like({"Fn::Join": ["", Match.array_with([authorizer_arn])]}),
        },
    )
    synth.template.has_resource_properties(
        "AWS::Lambda::Permission",
        {
            "Action": "lambda:InvokeFunction",
            "FunctionName": authorizer_arn,
            "Principal": "apigateway.amazonaws.com",
        },
    )


def test_stage_is_throttled_and_access_logged(synth: Synthesised) -> None:
    synth.template.has_resource_properties(
        "AWS::ApiGatewayV2::Stage",
        {
            "StageName": "$default",
            "AutoDeploy": True,
            "DefaultRouteSettings": Match.object_like({"ThrottlingRateLimit": Match.any_value()}),
            "AccessLogSettings": Match.object_like({"Format": Match.string_like_regexp("requestId")}),
        },
    )


# --- schedule and monitoring -----------------------------------------------------------------------------


def test_the_schedule_checks_hourly_for_a_daily_period_and_its_target_retries_into_a_dlq(synth: Synthesised) -> None:
    schedule = synth.stack.schedule
    assert schedule is not None
    synth.template.has_resource_properties(
        "AWS::Events::Rule",
        {
            "ScheduleExpression": "rate(1 hour)",
            "Targets": [
                Match.object_like(
                    {
                        "Arn": synth.alias_arn("consolidate"),
                        "RetryPolicy": {"MaximumRetryAttempts": 2, "MaximumEventAgeInSeconds": 1800},
                        "DeadLetterConfig": {"Arn": synth.arn_of(schedule.dead_letter_queue)},
                    }
                )
            ],
        },
    )
    # Every function knows the period: the schedule picks the namespaces with it, `stats` shows the next run.
    assert {synth.env(name)["REARVIEW_HINDSIGHT__SCHEDULE_HOURS"] for name in FUNCTION_NAMES} == {"24"}


def test_the_check_follows_the_period_and_a_zero_period_deploys_no_schedule(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    assert [check_expression(h) for h in (24, 6, 1, 0.5, 0.01)] == [
        "rate(1 hour)",
        "rate(1 hour)",
        "rate(1 hour)",
        "rate(30 minutes)",
        "rate(1 minute)",
    ]
    base = placeholder_tree(tmp_path_factory.mktemp("no-schedule"))
    off = synthesise(RearviewProps(**{**base.__dict__, "consolidation_schedule_hours": 0.0}))
    # Only the retention sweep's rule is left.
    [rule] = [r["Properties"] for r in off.resources.values() if r["Type"] == "AWS::Events::Rule"]
    assert rule["Targets"][0]["Arn"] == off.alias_arn("forget")
    assert off.stack.schedule is None
    assert off.env("recall")["REARVIEW_HINDSIGHT__SCHEDULE_HOURS"] == "0"


def test_the_retention_sweep_invokes_forget_hourly_and_its_target_retries_into_a_dlq(synth: Synthesised) -> None:
    retention = synth.stack.retention
    forget = synth.alias_arn("forget")
    synth.template.has_resource_properties(
        "AWS::Events::Rule",
        {
            "ScheduleExpression": "rate(1 hour)",
            "State": "ENABLED",
            "Targets": [
                Match.object_like(
                    {
                        "Arn": forget,
                        "RetryPolicy": {"MaximumRetryAttempts": 2, "MaximumEventAgeInSeconds": 1800},
                        "DeadLetterConfig": {"Arn": synth.arn_of(retention.dead_letter_queue)},
                    }
                )
            ],
        },
    )
    rules = [r["Properties"] for r in synth.resources.values() if r["Type"] == "AWS::Events::Rule"]
    assert [rule["Targets"][0]["Arn"] for rule in rules].count(forget) == 1
    # EventBridge may invoke the function; the function may write the table (it deletes what the sweep ages out).
    synth.template.has_resource_properties(
        "AWS::Lambda::Permission",
        {
            "Action": "lambda:InvokeFunction",
            "Principal": "events.amazonaws.com",
            "FunctionName": forget,
            "SourceArn": {"Fn::GetAtt": [synth.id_of(retention.rule), "Arn"]},
        },
    )
    assert {"dynamodb:Query", "dynamodb:BatchWriteItem", "dynamodb:DeleteItem"} <= synth.actions("forget")


def _alarms(synth: Synthesised) -> list[dict[str, Any]]:
    return [r["Properties"] for r in synth.resources.values() if r["Type"] == "AWS::CloudWatch::Alarm"]


def test_dead_letter_queue_alarms_fire_on_the_first_message(synth: Synthesised) -> None:
    queues = synth.stack.queues
    assert synth.stack.schedule is not None
    dead_letter_queues = (
        queues.dead_letter_queue,
        queues.index_failures,
        synth.stack.consolidation_queues.dead_letter_queue,
        synth.stack.schedule.dead_letter_queue,
        synth.stack.retention.dead_letter_queue,
    )
    for queue in dead_letter_queues:
        name = {"Fn::GetAtt": [synth.id_of(queue), "QueueName"]}
        (alarm,) = [
            a
            for a in _alarms(synth)
            if a.get("MetricName") == "ApproximateNumberOfMessagesVisible" and a["Dimensions"][0]["Value"] == name
        ]
        assert alarm["Threshold"] == 0
        assert alarm["ComparisonOperator"] == "GreaterThanThreshold"
        assert alarm["AlarmActions"] == [{"Ref": synth.id_of(synth.stack.monitoring.topic)}]


def _math_metrics(alarm: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The metrics of a metric-math alarm, by their id in the expression."""
    return {m["Id"]: m["MetricStat"]["Metric"] for m in alarm.get("Metrics", []) if "MetricStat" in m}


def _expression(alarm: dict[str, Any]) -> str:
    (expression,) = [m["Expression"] for m in alarm.get("Metrics", []) if "Expression" in m]
    return str(expression)


def test_every_aliased_function_alarms_on_its_error_rate_not_one_error(synth: Synthesised) -> None:
    for name in synth.stack.functions.aliases:
        alarm = synth.resources[synth.stack.get_logical_id(_alarm_of(synth, f"{_construct(name)}ErrorRate"))]
        props = alarm["Properties"]
        assert _expression(props) == "IF(invocations >= 5, 100 * errors / invocations, 0)"
        metrics = _math_metrics(props)
        assert {metrics["errors"]["MetricName"], metrics["invocations"]["MetricName"]} == {"Errors", "Invocations"}
        # The alias's own metrics: the version CodeDeploy is shifting to is what they measure.
        assert any(d["Name"] == "Resource" for d in metrics["errors"]["Dimensions"]), name
        assert (props["Threshold"], props["EvaluationPeriods"], props["DatapointsToAlarm"]) == (5, 3, 2)
        throttles = synth.resources[synth.stack.get_logical_id(_alarm_of(synth, f"{_construct(name)}Throttles"))]
        assert (throttles["Properties"]["EvaluationPeriods"], throttles["Properties"]["DatapointsToAlarm"]) == (3, 3)
        duration = synth.resources[synth.stack.get_logical_id(_alarm_of(synth, f"{_construct(name)}DurationP99"))]
        timeout_ms = synth.function(name)["Timeout"] * 1000
        assert duration["Properties"]["Threshold"] == pytest.approx(0.8 * timeout_ms)
        assert duration["Properties"]["ExtendedStatistic"] == "p99"


def _construct(name: str) -> str:
    return "".join(part.capitalize() for part in name.split("_"))


def _alarm_of(synth: Synthesised, construct_id: str) -> Any:
    """The CloudFormation resource of the monitoring construct's alarm `construct_id`."""
    return synth.stack.monitoring.node.find_child(construct_id).node.default_child


def test_a_failed_consolidation_run_raises_an_alarm(synth: Synthesised) -> None:
    (alarm,) = [a for a in _alarms(synth) if a.get("MetricName") == "ConsolidationFailures"]
    assert alarm["Namespace"] == "Rearview"
    # Powertools' metrics carry the function's service as their one dimension (never the namespace).
    assert alarm["Dimensions"] == [{"Name": "service", "Value": "rearview-consolidation_worker"}]
    assert synth.env("consolidation_worker")["POWERTOOLS_SERVICE_NAME"] == "rearview-consolidation_worker"
    assert (alarm["Threshold"], alarm["ComparisonOperator"], alarm["Statistic"]) == (0, "GreaterThanThreshold", "Sum")
    # Failures in 2 of 4 quarter-hours: a run that keeps failing, not one retried failure.
    assert (alarm["Period"], alarm["EvaluationPeriods"], alarm["DatapointsToAlarm"]) == (900, 4, 2)
    assert alarm["AlarmActions"] == [{"Ref": synth.id_of(synth.stack.monitoring.topic)}]


def test_stream_iterator_age_alarm_and_dashboard(synth: Synthesised) -> None:
    index_sync = {"Ref": synth.id_of(synth.stack.functions.functions["index_sync"])}
    (alarm,) = [a for a in _alarms(synth) if a.get("MetricName") == "IteratorAge"]
    assert alarm["Dimensions"] == [{"Name": "FunctionName", "Value": index_sync}]
    assert alarm["Statistic"] == "Maximum"
    assert (alarm["EvaluationPeriods"], alarm["DatapointsToAlarm"]) == (3, 3)
    # One dashboard per concern: the API, the functions, the pipeline (queues, consolidation), data and models.
    synth.template.resource_count_is("AWS::CloudWatch::Dashboard", 4)


def test_outputs_name_what_clients_need(synth: Synthesised) -> None:
    outputs = synth.template.to_json()["Outputs"]
    assert {"ApiUrl", "McpUrl", "TableName", "WriteQueueUrl", "OpenSearchEndpoint"} <= set(outputs)
    assert {"ConsolidationQueueUrl", "ConsolidationDeadLetterQueueUrl"} <= set(outputs)


# --- props, variants and the real tree -------------------------------------------------------------------


def test_props_from_context_convert_cli_strings() -> None:
    context = {
        "rearview:embeddingDim": "1024",
        "rearview:search": "domain",
        "rearview:searchStandbyReplicas": "false",
        "rearview:maxReceiveCount": "3",
        "rearview:searchAdminPrincipals": "arn:aws:iam::1:role/a,arn:aws:iam::1:role/b",
        "rearview:consolidationScheduleHours": "12",
        "rearview:consolidationMaxReceiveCount": "4",
        "rearview:consolidationMaxConcurrency": "3",
        "rearview:inducer": "bedrock",
    }
    props = RearviewProps.from_context(context.get)
    assert props.consolidation_schedule_hours == 12.0 and props.inducer == "bedrock"
    assert (props.consolidation_max_receive_count, props.consolidation_max_concurrency) == (4, 3)
    assert props.embedding_dim == 1024
    assert props.search == "domain"
    assert props.search_standby_replicas is False
    assert props.max_receive_count == 3
    assert props.search_admin_principals == ("arn:aws:iam::1:role/a", "arn:aws:iam::1:role/b")
    with pytest.raises(ValueError, match="serverless"):
        RearviewProps.from_context({"rearview:search": "elastic"}.get)
    with pytest.raises(ValueError, match="arm64"):
        RearviewProps.from_context({"rearview:architecture": "sparc"}.get)
    with pytest.raises(ValueError, match="rules"):
        RearviewProps.from_context({"rearview:inducer": "openai"}.get)


def test_emulator_variant_managed_domain_x86_and_hashing(tmp_path_factory: pytest.TempPathFactory) -> None:
    """The LocalStack flavour: a managed domain, x86_64 functions and layer, the hashing embedder."""
    base = placeholder_tree(tmp_path_factory.mktemp("domain"))
    props = RearviewProps.from_context(
        {
            "rearview:search": "domain",
            "rearview:maxReceiveCount": "3",
            "rearview:architecture": "x86_64",
            "rearview:embedder": "hashing",
        }.get,
        functions_dir=base.functions_dir,
        layer_dir=base.layer_dir,
    )
    domain = synthesise(props)
    assert domain.function("recall")["Architectures"] == ["x86_64"]
    domain.template.has_resource_properties(
        "AWS::Lambda::LayerVersion",
        {"CompatibleArchitectures": ["x86_64"], "CompatibleRuntimes": ["python3.13"]},
    )
    assert domain.env("recall")["REARVIEW_EMBEDDER"] == "hashing"
    domain.template.resource_count_is("AWS::OpenSearchServerless::Collection", 0)
    domain.template.has_resource_properties(
        "AWS::OpenSearchService::Domain",
        {
            "EncryptionAtRestOptions": {"Enabled": True},
            "NodeToNodeEncryptionOptions": {"Enabled": True},
            "DomainEndpointOptions": Match.object_like({"EnforceHTTPS": True}),
        },
    )
    assert domain.env("recall")["REARVIEW_AWS__OPENSEARCH_SERVICE"] == "es"
    assert domain.env("write_worker")["REARVIEW_AWS__MAX_RECEIVE_COUNT"] == "3"
    queue = domain.resources[domain.id_of(domain.stack.queues.queue)]["Properties"]
    assert queue["RedrivePolicy"]["maxReceiveCount"] == 3
    assert "es:ESHttpPost" in domain.actions("recall")
    assert not any(a.startswith("es:") for a in domain.actions("forget"))
    # The erase deletes a namespace's documents by query (a POST on the index).
    assert "es:ESHttpPost" in domain.actions("erase")


def test_without_a_search_cluster_the_functions_search_the_table(tmp_path_factory: pytest.TempPathFactory) -> None:
    """`rearview:search=table`: no collection, no domain, no index custom resource, no search grant; every function
    is told to search the table itself, and index sync still takes the stream (for Hindsight's triggers)."""
    base = placeholder_tree(tmp_path_factory.mktemp("table"))
    props = RearviewProps.from_context({"rearview:search": "table"}.get, functions_dir=base.functions_dir,
                                       layer_dir=base.layer_dir)  # fmt: skip
    table = synthesise(props)
    for kind in ("AWS::OpenSearchServerless::Collection", "AWS::OpenSearchService::Domain", RESOURCE_TYPE):
        table.template.resource_count_is(kind, 0)
    for name in FUNCTION_NAMES:
        assert table.env(name)["REARVIEW_AWS__SEARCH"] == "store", name
        assert not any(a.startswith(("aoss:", "es:")) for a in table.actions(name)), name
    table.template.has_resource_properties(
        "AWS::Lambda::EventSourceMapping", {"FunctionName": table.alias_name("index_sync")}
    )


def test_missing_layer_or_handler_fails_with_a_clear_error(tmp_path: Path) -> None:
    props = placeholder_tree(tmp_path)
    without_layer = RearviewProps(**{**props.__dict__, "layer_dir": tmp_path / "missing"})
    with pytest.raises(LayerNotBuilt, match="make layer"):
        RearviewStack(cdk.App(), "NoLayer", props=without_layer)
    (tmp_path / "functions" / "recall" / "handler.py").unlink()
    with pytest.raises(FileNotFoundError, match=r"recall[/\\]handler\.py"):
        RearviewStack(cdk.App(), "NoHandler", props=props)


@pytest.mark.parametrize("name", FUNCTION_NAMES)
def test_the_repository_has_a_handler_for_every_function(name: str) -> None:
    """`make synth` packages functions/<name>; each must export `handler`."""
    path = REPO_ROOT / "functions" / name / "handler.py"
    assert path.is_file(), f"{path} is missing"
    tree = ast.parse(path.read_text(encoding="utf-8"))
    defined = {n.name for n in tree.body if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)} | {
        t.id for n in tree.body if isinstance(n, ast.Assign) for t in n.targets if isinstance(t, ast.Name)
    }
    assert "handler" in defined
