"""Issue 21, production readiness, as the template shows it: the index provisioned at deploy, the gateway authorizer
on /mcp, reserved concurrency, versions and aliases under CodeDeploy with rollback alarms, the customer-managed key,
retention, the alarms that mean something, the dashboards and the budget, and cdk-nag with accepted findings only."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("aws_cdk", reason="the infra extra (aws-cdk-lib, constructs) is not installed")
pytest.importorskip("cdk_nag", reason="the infra extra (cdk-nag) is not installed")

import aws_cdk as cdk  # noqa: E402
from aws_cdk.assertions import Annotations, Match  # noqa: E402

from rearview.api.routes import MCP_ROUTE  # noqa: E402
from rearview_infra import nag  # noqa: E402
from rearview_infra.deployment import DEFAULT_DEPLOYMENT_CONFIG, DEPLOYMENT_CONFIGS, observation_minutes  # noqa: E402
from rearview_infra.functions import (  # noqa: E402
    ALIASED_FUNCTIONS,
    DEFAULT_SNAP_START,
    FUNCTION_NAMES,
    REQUEST_SERVERS,
    default_reserved_concurrency,
)
from rearview_infra.search_index import RESOURCE_TYPE  # noqa: E402
from rearview_infra.stack import RearviewProps, RearviewStack  # noqa: E402
from support.cdk_stack import Synthesised, placeholder_tree, synthesise  # noqa: E402

pytestmark = [pytest.mark.infra, pytest.mark.slow]


def _props(base: RearviewProps, **changes: Any) -> RearviewProps:
    return RearviewProps(**{**base.__dict__, **changes})


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> RearviewProps:
    return placeholder_tree(tmp_path_factory.mktemp("tree"))


@pytest.fixture(scope="module")
def synth(base: RearviewProps) -> Synthesised:
    return synthesise(base)


@pytest.fixture(scope="module")
def with_key(base: RearviewProps) -> Synthesised:
    return synthesise(_props(base, kms_key=True, alarm_email="ops@example.com"))


def _of_type(synth: Synthesised, kind: str) -> dict[str, dict[str, Any]]:
    return {k: r for k, r in synth.resources.items() if r["Type"] == kind}


# --- cdk-nag ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "context",
    [
        {},
        {"rearview:kmsKey": "true", "rearview:alarmEmail": "ops@example.com"},
        {"rearview:search": "domain"},
        {"rearview:waf": "true"},
    ],
    ids=["default", "kms", "domain", "waf"],
)
def test_cdk_nag_finds_nothing_that_is_not_accepted_with_a_reason(base: RearviewProps, context: dict[str, str]) -> None:
    app = cdk.App(context=context)
    props = RearviewProps.from_context(
        app.node.try_get_context, functions_dir=base.functions_dir, layer_dir=base.layer_dir
    )
    stack = RearviewStack(app, "Nagged", props=props)
    nag.add_checks(app)
    app.synth()
    errors = Annotations.from_stack(stack).find_error("*", Match.string_like_regexp(".*"))
    assert [f"{e.id}: {e.entry.data}" for e in errors] == []


def test_every_accepted_finding_says_why() -> None:
    groups = (nag.FUNCTIONS, nag.DEAD_LETTER_QUEUES, nag.CODEDEPLOY_ROLES, nag.ALARM_TOPIC, nag.HEALTH_ROUTE)
    for accepted in (item for group in (*groups, nag.MANAGED_DOMAIN) for item in group):
        assert len(accepted.reason) > 40, accepted.rule
        # Wildcards and managed policies are accepted for exactly what they are, never the rule as a whole.
        if accepted.rule in ("AwsSolutions-IAM4", "AwsSolutions-IAM5"):
            assert accepted.applies_to or accepted.applies_to_regex, accepted.rule


# --- item 1: the index at deploy -------------------------------------------------------------------------


def test_the_search_index_is_provisioned_at_deploy_by_index_setup(synth: Synthesised) -> None:
    (resource_id, resource), *others = _of_type(synth, RESOURCE_TYPE).items()
    assert not others
    props = resource["Properties"]
    setup = synth.stack.functions.functions["index_setup"]
    assert props["ServiceToken"] == synth.arn_of(setup)
    assert props["IndexName"] == "rearview-memories" and props["Dimension"] == "512"
    # A new layer (a new library, maybe a new mapping field) runs ensure_index again.
    assert props["LayerVersion"] == {"Ref": synth.id_of(synth.stack.layer.layer)}
    # After the collection and its data-access policy, and after the function's role policy.
    depends = set(resource["DependsOn"])
    collection = synth.stack.get_logical_id(synth.collection().collection)
    access = synth.stack.get_logical_id(synth.collection().access_policy)
    assert {collection, access, synth.role_id("index_setup")} <= depends
    assert any(d.startswith("FunctionsIndexSetupServiceRoleDefaultPolicy") for d in depends)
    assert resource_id.startswith("SearchIndex")
    fn = synth.function("index_setup")
    assert fn["Timeout"] == 600 and "ReservedConcurrentExecutions" not in fn


# --- item 2: the edge ------------------------------------------------------------------------------------


def test_mcp_is_behind_the_gateway_authorizer_unless_the_deployment_turns_it_off(
    synth: Synthesised, base: RearviewProps
) -> None:
    def mcp_route(s: Synthesised) -> dict[str, Any]:
        (route,) = [
            r["Properties"]
            for r in _of_type(s, "AWS::ApiGatewayV2::Route").values()
            if r["Properties"]["RouteKey"] == MCP_ROUTE.route_key
        ]
        return route

    assert mcp_route(synth)["AuthorizationType"] == "CUSTOM"
    open_mcp = synthesise(_props(base, mcp_gateway_authorizer=False))
    assert mcp_route(open_mcp)["AuthorizationType"] == "NONE"


def test_every_function_but_the_deploy_hook_has_reserved_concurrency(synth: Synthesised) -> None:
    reserved = {name: synth.function(name).get("ReservedConcurrentExecutions") for name in FUNCTION_NAMES}
    assert reserved == {**default_reserved_concurrency(), "index_setup": None}
    # The queue workers' reservations cover their event sources' maximum concurrency (else they throttle themselves).
    assert reserved["write_worker"] >= 10 and reserved["consolidation_worker"] >= 5


def test_reserved_concurrency_from_context_and_its_guard(base: RearviewProps) -> None:
    props = RearviewProps.from_context({"rearview:reservedConcurrency": "recall=80,forget=0"}.get)
    assert props.reserved_concurrency["recall"] == 80 and "forget" not in props.reserved_concurrency
    assert RearviewProps.from_context({"rearview:reservedConcurrency": "none"}.get).reserved_concurrency == {}
    with pytest.raises(ValueError, match="no function"):
        RearviewProps.from_context({"rearview:reservedConcurrency": "recal=3"}.get)
    starved = _props(base, reserved_concurrency={**default_reserved_concurrency(), "write_worker": 2})
    with pytest.raises(ValueError, match="write_worker=2 is below"):
        RearviewStack(cdk.App(), "Starved", props=starved)


def test_snapstart_snapshots_the_published_versions_of_the_functions_callers_wait_on(synth: Synthesised) -> None:
    snapped = {name for name in FUNCTION_NAMES if synth.function(name).get("SnapStart")}
    assert snapped == DEFAULT_SNAP_START == {"authorizer", "mcp", "recall", "write"}
    for name in snapped:
        assert synth.function(name)["SnapStart"] == {"ApplyOn": "PublishedVersions"}
        # A snapshot exists only for a published version: each is invoked through its alias, never $LATEST.
        assert name in ALIASED_FUNCTIONS and name in synth.stack.functions.aliases
        # SnapStart refuses EFS and ephemeral storage over 512 MB: none is configured.
        assert "FileSystemConfigs" not in synth.function(name)
        assert synth.function(name).get("EphemeralStorage", {"Size": 512})["Size"] <= 512


def test_snapstart_from_context(base: RearviewProps) -> None:
    assert RearviewProps.from_context({}.get).snap_start == DEFAULT_SNAP_START
    assert RearviewProps.from_context({"rearview:snapStart": "none"}.get).snap_start == frozenset()
    assert RearviewProps.from_context({"rearview:snapStart": "mcp, recall"}.get).snap_start == {"mcp", "recall"}
    assert RearviewProps.from_context({"rearview:snapStart": ["mcp"]}.get).snap_start == {"mcp"}
    assert RearviewProps.from_context({"rearview:snapStart": "all"}.get).snap_start == set(ALIASED_FUNCTIONS)
    with pytest.raises(ValueError, match="index_setup.*not a function with published versions"):
        RearviewProps.from_context({"rearview:snapStart": "index_setup"}.get)
    with pytest.raises(ValueError, match="'recal'"):
        RearviewProps.from_context({"rearview:snapStart": "recal"}.get)
    off = synthesise(_props(base, snap_start=frozenset()))
    assert not any(off.function(name).get("SnapStart") for name in FUNCTION_NAMES)


def test_the_stage_throttles_every_route(synth: Synthesised) -> None:
    (stage,) = _of_type(synth, "AWS::ApiGatewayV2::Stage").values()
    settings = stage["Properties"]["DefaultRouteSettings"]
    assert (settings["ThrottlingRateLimit"], settings["ThrottlingBurstLimit"]) == (100, 200)


# --- item 4: versions, aliases, gradual deployment ----------------------------------------------------------


def test_every_trigger_invokes_a_live_alias_that_codedeploy_shifts_gradually(synth: Synthesised) -> None:
    aliases = _of_type(synth, "AWS::Lambda::Alias")
    assert len(aliases) == len(ALIASED_FUNCTIONS) == len(FUNCTION_NAMES) - 1
    groups = _of_type(synth, "AWS::CodeDeploy::DeploymentGroup")
    assert len(groups) == len(ALIASED_FUNCTIONS)
    for name in ALIASED_FUNCTIONS:
        alias = synth.stack.functions.aliases[name]
        resource = synth.resources[synth.id_of(alias)]
        assert resource["Properties"]["Name"] == "live"
        assert "Fn::GetAtt" in resource["Properties"]["FunctionVersion"]  # a published version, never $LATEST
        update = resource["UpdatePolicy"]["CodeDeployLambdaAliasUpdate"]
        group = synth.resources[synth.id_of(synth.stack.deployment.groups[name])]["Properties"]
        assert update["DeploymentGroupName"] == {"Ref": synth.id_of(synth.stack.deployment.groups[name])}
        assert group["DeploymentConfigName"] == DEFAULT_DEPLOYMENT_CONFIG
        assert set(group["AutoRollbackConfiguration"]["Events"]) == {
            "DEPLOYMENT_FAILURE",
            "DEPLOYMENT_STOP_ON_REQUEST",
            "DEPLOYMENT_STOP_ON_ALARM",
        }
        # Rolled back on the function's own error rate and throttles, and for a function that answers HTTP on the
        # 5xx rate of the version the alias is moved to (a 500 answered is no Lambda error).
        alarms = {a["Name"]["Ref"] for a in group["AlarmConfiguration"]["Alarms"]}
        expected = {
            synth.stack.get_logical_id(a.node.default_child) for a in synth.stack.monitoring.function_alarms[name]
        }
        assert alarms == expected and len(alarms) == (3 if name in REQUEST_SERVERS else 2), name
        # Every published version is kept when the next replaces it: the manual rollback's target stays.
        version = synth.resources[resource["Properties"]["FunctionVersion"]["Fn::GetAtt"][0]]
        assert (version["Type"], version["UpdateReplacePolicy"], version["DeletionPolicy"]) == (
            "AWS::Lambda::Version",
            "Retain",
            "Retain",
        )


def test_a_canary_of_an_http_function_rolls_back_on_its_new_version_s_5xx(synth: Synthesised) -> None:
    props = _alarm(synth, "RecallVersionServerErrorRate")
    metrics = {m["Id"]: m["MetricStat"]["Metric"] for m in props["Metrics"] if "MetricStat" in m}
    assert {m["MetricName"] for m in metrics.values()} == {"VersionRequests", "Version5xx"}
    version = synth.stack.functions.aliases["recall"].version
    for metric in metrics.values():
        dimensions = {d["Name"]: d["Value"] for d in metric["Dimensions"]}
        assert dimensions == {"service": "rearview-recall", "version": synth.resolve(version.version)}
    assert (props["Threshold"], props["DatapointsToAlarm"]) == (5, 2)


def test_the_canary_lasts_as_long_as_its_rollback_alarms_take_to_fire(synth: Synthesised) -> None:
    # A canary that ends before its alarms could fire rolls nothing back.
    for name in ALIASED_FUNCTIONS:
        for alarm in synth.stack.monitoring.function_alarms[name]:
            props = synth.resources[synth.stack.get_logical_id(alarm.node.default_child)]["Properties"]
            if "Metrics" in props:  # a rate: the period of the metrics it is made of
                period = next(m["MetricStat"]["Period"] for m in props["Metrics"] if "MetricStat" in m)
            else:
                period = props["Period"]
            to_fire = props["DatapointsToAlarm"] * period / 60
            assert observation_minutes(DEFAULT_DEPLOYMENT_CONFIG) >= to_fire, (name, props["AlarmDescription"])
    assert observation_minutes("CodeDeployDefault.LambdaCanary10Percent5Minutes") == 5
    assert observation_minutes("CodeDeployDefault.LambdaLinear10PercentEvery2Minutes") == 18
    assert observation_minutes("CodeDeployDefault.LambdaAllAtOnce") == 0
    assert all(observation_minutes(c) > 0 for c in DEPLOYMENT_CONFIGS if "AllAtOnce" not in c)


def test_a_deployment_configuration_outside_codedeploy_s_is_refused(base: RearviewProps) -> None:
    with pytest.raises(ValueError, match="deploymentConfig"):
        RearviewStack(cdk.App(), "Odd", props=_props(base, deployment_config="Canary50Percent"))
    linear = synthesise(_props(base, deployment_config="CodeDeployDefault.LambdaLinear10PercentEvery1Minute"))
    (group, *_) = _of_type(linear, "AWS::CodeDeploy::DeploymentGroup").values()
    assert group["Properties"]["DeploymentConfigName"] == "CodeDeployDefault.LambdaLinear10PercentEvery1Minute"


def test_a_new_layer_makes_new_function_versions(base: RearviewProps, tmp_path: Path) -> None:
    """The alias must move when only the library changes: the layer is part of each version's hash."""
    first = synthesise(base)
    other_layer = tmp_path / "layer"
    (other_layer / "python").mkdir(parents=True)
    (other_layer / "python" / "changed.py").write_text("VERSION = 2\n")
    second = synthesise(_props(base, layer_dir=other_layer))

    def versions(s: Synthesised) -> set[str]:
        return {k for k, r in s.resources.items() if r["Type"] == "AWS::Lambda::Version" and "Recall" in k}

    assert versions(first) and versions(first).isdisjoint(versions(second))


# --- item 5: keys, retention, grants ---------------------------------------------------------------------


def test_data_is_retained_and_the_table_protected_by_default(synth: Synthesised, base: RearviewProps) -> None:
    table = synth.resources[synth.id_of(synth.stack.storage.table)]
    assert table["DeletionPolicy"] == "Retain" and table["Properties"]["DeletionProtectionEnabled"] is True
    queues = synth.stack.queues
    dead_letters = [queues.dead_letter_queue, queues.index_failures, synth.stack.consolidation_queues.dead_letter_queue]
    assert synth.stack.schedule is not None
    dead_letters.append(synth.stack.schedule.dead_letter_queue)
    assert {synth.resources[synth.id_of(q)]["DeletionPolicy"] for q in dead_letters} == {"Retain"}
    collection = synth.resources[synth.stack.get_logical_id(synth.collection().collection)]
    assert collection["DeletionPolicy"] == "Retain"
    throwaway = synthesise(_props(base, retain_data=False))
    table = throwaway.resources[throwaway.id_of(throwaway.stack.storage.table)]
    assert table["DeletionPolicy"] == "Delete" and table["Properties"]["DeletionProtectionEnabled"] is False


def test_without_a_customer_key_everything_is_still_encrypted(synth: Synthesised) -> None:
    assert not _of_type(synth, "AWS::KMS::Key")
    table = synth.resources[synth.id_of(synth.stack.storage.table)]["Properties"]
    assert table["SSESpecification"]["SSEEnabled"] is True
    assert all(q["Properties"]["SqsManagedSseEnabled"] for q in _of_type(synth, "AWS::SQS::Queue").values())


def test_the_customer_managed_key_encrypts_table_queues_topic_logs_and_collection(with_key: Synthesised) -> None:
    (key_id, key), *others = _of_type(with_key, "AWS::KMS::Key").items()
    assert not others
    assert key["Properties"]["EnableKeyRotation"] is True and key["DeletionPolicy"] == "Retain"
    key_arn = {"Fn::GetAtt": [key_id, "Arn"]}
    table = with_key.resources[with_key.id_of(with_key.stack.storage.table)]["Properties"]
    assert table["SSESpecification"] == {"KMSMasterKeyId": key_arn, "SSEEnabled": True, "SSEType": "KMS"}
    queues = _of_type(with_key, "AWS::SQS::Queue").values()
    assert len(queues) == 7 and all(q["Properties"]["KmsMasterKeyId"] == key_arn for q in queues)
    (topic,) = _of_type(with_key, "AWS::SNS::Topic").values()
    assert topic["Properties"]["KmsMasterKeyId"] == key_arn
    log_groups = _of_type(with_key, "AWS::Logs::LogGroup").values()
    assert len(log_groups) == len(FUNCTION_NAMES) + 1  # one per function and the API's access log
    assert all(g["Properties"]["KmsKeyId"] == key_arn for g in log_groups)
    (encryption,) = [
        p["Properties"]
        for p in _of_type(with_key, "AWS::OpenSearchServerless::SecurityPolicy").values()
        if p["Properties"]["Type"] == "encryption"
    ]
    policy = json.dumps(with_key.resolve(encryption["Policy"]))
    assert '\\"AWSOwnedKey\\":false' in policy and "KmsARN" in policy
    # The services that write into encrypted resources themselves may use the key.
    principals = json.dumps(key["Properties"]["KeyPolicy"])
    for service in ("logs.", "cloudwatch.amazonaws.com", "events.amazonaws.com", "budgets.amazonaws.com"):
        assert service in principals


def test_functions_using_the_key_are_granted_it_through_what_they_use(with_key: Synthesised) -> None:
    (key_id,) = _of_type(with_key, "AWS::KMS::Key")
    key_arn = {"Fn::GetAtt": [key_id, "Arn"]}
    for name in ("write", "recall", "write_worker", "index_sync", "authorizer"):
        assert "kms:Decrypt" in {
            a for st in with_key.statements(name) if key_arn in _resources(st) for a in _actions(st)
        }, name
    assert not any(key_arn in _resources(st) for st in with_key.statements("index_setup"))


def _resources(statement: dict[str, Any]) -> list[Any]:
    value = statement["Resource"]
    return value if isinstance(value, list) else [value]


def _actions(statement: dict[str, Any]) -> list[str]:
    value = statement["Action"]
    return value if isinstance(value, list) else [value]


# --- item 6: alarms that mean something, dashboards, cost ------------------------------------------------


def _alarm(synth: Synthesised, construct_id: str) -> dict[str, Any]:
    child = synth.stack.monitoring.node.find_child(construct_id).node.default_child
    return dict(synth.resources[synth.stack.get_logical_id(child)]["Properties"])


def _expression(alarm: dict[str, Any]) -> str:
    (expression,) = [m["Expression"] for m in alarm["Metrics"] if "Expression" in m]
    return str(expression)


def test_api_alarms_on_its_5xx_rate_and_p99_latency(synth: Synthesised) -> None:
    rate = _alarm(synth, "ApiServerErrorRate")
    assert _expression(rate) == "IF(requests >= 20, 100 * errors / requests, 0)"
    assert (rate["Threshold"], rate["EvaluationPeriods"], rate["DatapointsToAlarm"]) == (5, 3, 2)
    latency = _alarm(synth, "ApiLatencyP99")
    assert (latency["ExtendedStatistic"], latency["Threshold"], latency["DatapointsToAlarm"]) == ("p99", 5000, 3)


def test_data_alarms_dynamodb_queue_ages_search_and_bedrock(synth: Synthesised) -> None:
    throttles = _alarm(synth, "TableThrottles")
    assert _expression(throttles) == "reads + writes"
    assert _alarm(synth, "TableSystemErrors")["MetricName"] == "SystemErrors"
    write_age = _alarm(synth, "WriteQueueAge")
    assert (write_age["MetricName"], write_age["Threshold"]) == ("ApproximateAgeOfOldestMessage", 300)
    assert _alarm(synth, "ConsolidationQueueAge")["Threshold"] == 3600
    fallbacks = _alarm(synth, "SearchFallbacks")
    services = {m["MetricStat"]["Metric"]["Dimensions"][0]["Value"] for m in fallbacks["Metrics"] if "MetricStat" in m}
    assert services == {f"rearview-{n}" for n in ("write_worker", "recall", "mcp")}
    throttled = _alarm(synth, "ThrottledRequests")
    services = {m["MetricStat"]["Metric"]["Dimensions"][0]["Value"] for m in throttled["Metrics"] if "MetricStat" in m}
    assert services == {f"rearview-{n}" for n in ("write", "recall", "forget", "erase", "consolidate", "mcp")}
    assert {m["MetricStat"]["Metric"]["MetricName"] for m in throttled["Metrics"] if "MetricStat" in m} == {"Throttled"}
    assert (throttled["Threshold"], throttled["EvaluationPeriods"], throttled["DatapointsToAlarm"]) == (300, 3, 3)
    search = _alarm(synth, "SearchErrors")
    assert {m["MetricStat"]["Metric"]["Namespace"] for m in search["Metrics"] if "MetricStat" in m} == {"AWS/AOSS"}
    bedrock = _alarm(synth, "BedrockAmazonTitanEmbedTextV20Throttles")
    assert (bedrock["Namespace"], bedrock["MetricName"]) == ("AWS/Bedrock", "InvocationThrottles")
    assert bedrock["Dimensions"] == [{"Name": "ModelId", "Value": "amazon.titan-embed-text-v2:0"}]


def test_every_alarm_notifies_the_topic_and_none_fires_on_one_bad_minute(synth: Synthesised) -> None:
    topic = {"Ref": synth.id_of(synth.stack.monitoring.topic)}
    alarms = [a["Properties"] for a in _of_type(synth, "AWS::CloudWatch::Alarm").values()]
    assert len(alarms) > 40
    for alarm in alarms:
        assert alarm["AlarmActions"] == [topic]
        single = alarm["EvaluationPeriods"] == 1
        # Only a dead-letter queue's depth fires at once: one message there is one piece of work lost to retries.
        assert not single or alarm.get("MetricName") == "ApproximateNumberOfMessagesVisible", alarm


def test_a_dashboard_per_concern_and_a_monthly_budget(synth: Synthesised, base: RearviewProps) -> None:
    assert len(_of_type(synth, "AWS::CloudWatch::Dashboard")) == 4
    (budget,) = _of_type(synth, "AWS::Budgets::Budget").values()
    props = budget["Properties"]
    # Above the idle deployment's ~$360 (infra/README.md): a default that fired in the first week would be ignored.
    assert props["Budget"]["BudgetLimit"] == {"Amount": 500, "Unit": "USD"}
    kinds = {n["Notification"]["NotificationType"] for n in props["NotificationsWithSubscribers"]}
    assert kinds == {"ACTUAL", "FORECASTED"}
    topic = {"Ref": synth.id_of(synth.stack.monitoring.topic)}
    assert all(
        n["Subscribers"] == [{"Address": topic, "SubscriptionType": "SNS"}]
        for n in props["NotificationsWithSubscribers"]
    )
    assert not _of_type(synthesise(_props(base, monthly_budget_usd=0)), "AWS::Budgets::Budget")
