"""The emulator's parts without processes: the template reader and its intrinsic functions, Lambda's event filters,
the HTTP API's routing, authorizer and error answers, and the schedule's periods."""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import pytest

from rearview.emulator.containers import FunctionError
from rearview.emulator.event_filter import matches, matches_any
from rearview.emulator.http_front import ApiGateway
from rearview.emulator.stream_poller import TTL_IDENTITY, lambda_json
from rearview.emulator.template import Authorizer, Resolver, Route, Template, TemplateError, referenced_ids
from rearview.emulator.timers import rate_seconds

pytestmark = pytest.mark.unit

# The stack's own filters of index sync's stream (infra/rearview_infra/functions.py).
STREAM_FILTERS: list[dict[str, Any]] = [
    {"dynamodb": {"Keys": {"sk": {"S": [{"prefix": "EP#"}]}}}},
    {"dynamodb": {"Keys": {"sk": {"S": [{"prefix": "FACT#"}]}}}},
    {
        "eventName": ["REMOVE"],
        "userIdentity": {"type": ["Service"], "principalId": ["dynamodb.amazonaws.com"]},
        "dynamodb": {"Keys": {"sk": {"S": [{"prefix": "WM#"}]}}},
    },
]


def _record(event: str, sk: str, **extra: Any) -> dict[str, Any]:
    return {"eventName": event, "dynamodb": {"Keys": {"pk": {"S": "NS#a"}, "sk": {"S": sk}}}, **extra}


def test_the_stack_filters_pass_memories_and_ttl_removals_of_working_memory_only() -> None:
    assert matches_any(STREAM_FILTERS, _record("INSERT", "EP#1"))
    assert matches_any(STREAM_FILTERS, _record("MODIFY", "FACT#1"))
    assert not matches_any(STREAM_FILTERS, _record("INSERT", "WM#s#k"))
    assert not matches_any(STREAM_FILTERS, _record("REMOVE", "WM#s#k"))  # a caller's delete
    assert matches_any(STREAM_FILTERS, _record("REMOVE", "WM#s#k", userIdentity=dict(TTL_IDENTITY)))
    assert not matches_any(STREAM_FILTERS, _record("INSERT", "STATE"))
    assert matches_any([], _record("INSERT", "STATE"))


def test_filter_rules_beyond_the_stacks() -> None:
    assert matches({"n": [{"numeric": [">", 1, "<=", 5]}]}, {"n": 5})
    assert not matches({"n": [{"numeric": [">", 1]}]}, {"n": "2"})
    assert matches({"a": [{"exists": False}]}, {"b": 1})
    assert not matches({"a": [{"exists": True}]}, {"b": 1})
    assert matches({"a": [{"anything-but": ["x", "y"]}]}, {"a": "z"})
    assert matches({"a": [{"suffix": ".fifo"}, "exact"]}, {"a": "q.fifo"})
    assert matches({"a": [{"equals-ignore-case": "ABC"}]}, {"a": "abc"})
    with pytest.raises(ValueError, match="wildcard"):
        matches({"a": [{"wildcard": "*"}]}, {"a": "b"})


def test_stream_records_take_lambdas_json_shape() -> None:
    from datetime import UTC, datetime

    shaped = lambda_json({"B": b"\x00\x01", "when": datetime(2026, 3, 10, tzinfo=UTC), "SS": {"a"}})
    assert shaped == {"B": base64.b64encode(b"\x00\x01").decode(), "when": 1773100800, "SS": ["a"]}


def test_the_resolver_answers_intrinsic_functions() -> None:
    values = {("Table", "Ref"): "rearview-table", ("Queue", "Arn"): "arn:aws:sqs:us-east-1:1:q"}
    resolver = Resolver(lambda logical_id, attribute: values[(logical_id, attribute)])
    assert resolver.resolve({"Ref": "Table"}) == "rearview-table"
    assert resolver.resolve({"Ref": "AWS::Region"}) == "us-east-1"
    assert resolver.resolve({"Fn::GetAtt": ["Queue", "Arn"]}) == "arn:aws:sqs:us-east-1:1:q"
    assert resolver.resolve({"Fn::Join": ["/", ["a", {"Ref": "Table"}]]}) == "a/rearview-table"
    assert resolver.resolve({"Fn::Sub": "${Table}@${AWS::Region}:${Queue.Arn}"}) == (
        "rearview-table@us-east-1:arn:aws:sqs:us-east-1:1:q"
    )
    assert resolver.resolve({"Fn::Sub": ["${x}!", {"x": {"Ref": "Table"}}]}) == "rearview-table!"
    assert resolver.resolve({"Fn::Select": [1, {"Fn::Split": [":", "a:b:c"]}]}) == "b"
    assert resolver.resolve({"k": [{"Ref": "Table"}]}) == {"k": ["rearview-table"]}
    assert referenced_ids({"Fn::Join": ["", [{"Ref": "A"}, {"Fn::GetAtt": "B.Arn"}, {"Ref": "AWS::Region"}]]}) == [
        "A",
        "B",
    ]


def _template(tmp_path: Path) -> Template:
    body = {
        "Resources": {
            "Fn": {
                "Type": "AWS::Lambda::Function",
                "Properties": {"Code": {"S3Key": "abc.zip"}, "Handler": "handler.handler", "Timeout": 9},
            },
            "Live": {"Type": "AWS::Lambda::Alias", "Properties": {"FunctionName": {"Ref": "Fn"}, "Name": "live"}},
            "Auth": {
                "Type": "AWS::ApiGatewayV2::Authorizer",
                "Properties": {
                    "AuthorizerUri": {"Fn::Join": ["", ["arn:", {"Fn::GetAtt": ["Fn", "Arn"]}, "/invocations"]]},
                    "AuthorizerResultTtlInSeconds": 300,
                    "IdentitySource": ["$request.header.Authorization"],
                },
            },
            "Integration": {
                "Type": "AWS::ApiGatewayV2::Integration",
                "Properties": {"IntegrationUri": {"Ref": "Live"}},
            },
            "Route": {
                "Type": "AWS::ApiGatewayV2::Route",
                "Properties": {
                    "RouteKey": "POST /v1/namespaces/{ns}/recall",
                    "AuthorizationType": "CUSTOM",
                    "AuthorizerId": {"Ref": "Auth"},
                    "Target": {"Fn::Join": ["", ["integrations/", {"Ref": "Integration"}]]},
                },
            },
            "Queue": {"Type": "AWS::SQS::Queue", "Properties": {}},
            "Mapping": {
                "Type": "AWS::Lambda::EventSourceMapping",
                "Properties": {
                    "EventSourceArn": {"Fn::GetAtt": ["Queue", "Arn"]},
                    "FunctionName": {"Ref": "Live"},
                    "BatchSize": 5,
                    "FunctionResponseTypes": ["ReportBatchItemFailures"],
                },
            },
            "Rule": {
                "Type": "AWS::Events::Rule",
                "Properties": {
                    "ScheduleExpression": "rate(5 minutes)",
                    "Targets": [{"Arn": {"Fn::GetAtt": ["Fn", "Arn"]}}],
                },
            },
        }
    }
    path = tmp_path / "Stack.template.json"
    path.write_text(json.dumps(body))
    assets = {"files": {"abc": {"displayName": "Functions/WriteWorker/Code", "source": {"path": "asset.abc"}}}}
    (tmp_path / "Stack.assets.json").write_text(json.dumps(assets))
    return Template.load(path)


def test_the_template_names_functions_routes_event_sources_and_schedules(tmp_path: Path) -> None:
    template = _template(tmp_path)
    assert template.stack_name == "Stack"
    (function,) = template.functions().values()
    assert (function.name, function.code_dir, function.timeout_seconds) == ("write_worker", tmp_path / "asset.abc", 9)
    assert template.routes() == [Route("POST", "/v1/namespaces/{ns}/recall", "Fn", "Auth")]
    assert template.authorizers()["Auth"].function == "Fn"
    (source,) = template.event_sources()
    assert (source.function, source.source, source.batch_size, source.reports_item_failures) == ("Fn", "Queue", 5, True)
    (schedule,) = template.schedules()
    assert rate_seconds(schedule.expression) == 300


def test_a_missing_template_says_how_to_make_it(tmp_path: Path) -> None:
    with pytest.raises(TemplateError, match="make emulate"):
        Template.load(tmp_path / "nothing.template.json")


def test_schedule_periods() -> None:
    assert rate_seconds("rate(1 hour)") == 3600
    assert rate_seconds("rate(15 minutes)") == 900
    assert rate_seconds("rate(2 days)") == 172800
    assert rate_seconds("cron(0 * * * ? *)", default_seconds=60) == 60


# --- the HTTP API -----------------------------------------------------------------------------------------------


class Functions:
    """What the gateway invokes: an authorizer that knows one key, and functions that echo their event."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, dict[str, Any]]] = []
        self.fail: str | None = None

    def __call__(self, function: str, event: dict[str, Any], timeout: float) -> Any:
        self.calls.append((function, event))
        if function == "auth":
            ok = event["identitySource"] == ["Bearer good"]
            return {"isAuthorized": ok, "context": {"key_id": "k1"}} if ok else {"isAuthorized": False}
        if self.fail:
            raise FunctionError(function, self.fail, "boom")
        return {"statusCode": 201, "headers": {"X-Seen": "yes"}, "body": json.dumps({"event": event})}


ROUTES = [
    Route("POST", "/v1/namespaces/{ns}/recall", "recall", "Auth"),
    Route("GET", "/v1/namespaces/{ns}/memories/{id}", "recall", "Auth"),
    Route("GET", "/v1/health", "recall", None),
    Route("ANY", "/files/{proxy+}", "files", None),
]
AUTHORIZERS = {"Auth": Authorizer("Auth", "auth", 300, ("$request.header.Authorization",), True)}


def test_the_gateway_runs_the_authorizer_then_sends_a_payload_2_event() -> None:
    functions = Functions()
    gateway = ApiGateway(ROUTES, AUTHORIZERS, functions)
    headers = {"Authorization": "Bearer good", "Content-Type": "application/json"}

    response = gateway.handle("POST", "/v1/namespaces/acme%3Au-1/recall?x=1&x=2", headers, b'{"q": 1}', "127.0.0.1")

    assert response.status == 201 and response.headers["x-seen"] == "yes"
    event = json.loads(response.body)["event"]
    assert event["routeKey"] == "POST /v1/namespaces/{ns}/recall"
    assert event["pathParameters"] == {"ns": "acme:u-1"}
    assert event["queryStringParameters"] == {"x": "1,2"}
    assert event["body"] == '{"q": 1}' and event["isBase64Encoded"] is False
    assert event["requestContext"]["authorizer"] == {"lambda": {"key_id": "k1"}}
    assert event["headers"]["authorization"] == "Bearer good"

    # The answer is cached per identity for the authorizer's TTL: no second authorizer call.
    gateway.handle("POST", "/v1/namespaces/acme/recall", headers, b"{}", "127.0.0.1")
    assert [name for name, _ in functions.calls].count("auth") == 1


def test_the_gateways_own_answers() -> None:
    functions = Functions()
    gateway = ApiGateway(ROUTES, AUTHORIZERS, functions)
    post = "/v1/namespaces/acme/recall"

    assert (
        gateway.handle("POST", post, {}, b"", "ip").status,
        json.loads(gateway.handle("POST", post, {}, b"", "ip").body),
    ) == (
        401,
        {"message": "Unauthorized"},
    )
    assert gateway.handle("POST", post, {"authorization": "Bearer bad"}, b"", "ip").status == 403
    assert gateway.handle("GET", "/nowhere", {}, b"", "ip").status == 404
    assert gateway.handle("DELETE", "/v1/health", {}, b"", "ip").status == 404
    assert gateway.handle("GET", "/v1/health", {}, b"", "ip").status == 201
    proxied = json.loads(
        gateway.handle("PUT", "/files/a/b.bin", {"content-type": "application/octet-stream"}, b"\x00", "ip").body
    )
    assert proxied["event"]["pathParameters"] == {"proxy": "a/b.bin"}
    assert proxied["event"]["isBase64Encoded"] is True and base64.b64decode(proxied["event"]["body"]) == b"\x00"
    functions.fail = "ValueError"
    assert gateway.handle("GET", "/v1/health", {}, b"", "ip").status == 500
    functions.fail = "Sandbox.Timedout"
    assert gateway.handle("GET", "/v1/health", {}, b"", "ip").status == 503


def test_a_stopped_emulators_iam_checks_do_not_outlive_it() -> None:
    """`enforce` switches moto's IAM checks on for the whole process; `release` (the emulator's stop) must switch
    them off, or every later moto user in the process is refused with InvalidClientTokenId."""
    import boto3
    from moto import mock_aws, settings

    from rearview.emulator import iam as emulator_iam

    allowed_before = settings.INITIAL_NO_AUTH_ACTION_COUNT
    emulator_iam.enforce(emulator_iam.Principals(admin=emulator_iam.Credentials("AKIAADMIN", "secret")))
    try:
        assert settings.INITIAL_NO_AUTH_ACTION_COUNT == 0
    finally:
        emulator_iam.release()
    assert allowed_before == settings.INITIAL_NO_AUTH_ACTION_COUNT
    assert not emulator_iam.DynamoDBAccess.enforcing()
    with mock_aws():
        client = boto3.client("sqs", region_name="us-east-1", aws_access_key_id="x", aws_secret_access_key="y")
        assert client.create_queue(QueueName="after-the-emulator")["QueueUrl"]
