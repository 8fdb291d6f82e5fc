"""The optional edge (`rearview:waf`): CloudFront in front of the HTTP API with an AWS WAF web ACL. Off: none of it
in the template. On: the distribution, its web ACL (CLOUDFRONT scope, the rate rule and the managed groups) and
their association, and a template rule that refuses a region other than us-east-1; or an existing web ACL by
ARN, in any region."""

from __future__ import annotations

from typing import Any

import pytest

pytest.importorskip("aws_cdk", reason="the infra extra (aws-cdk-lib, constructs) is not installed")

import aws_cdk as cdk  # noqa: E402

from rearview_infra.edge import COUNTED_COMMON_RULES, MANAGED_RULE_GROUPS, check_web_acl_arn  # noqa: E402
from rearview_infra.stack import RearviewProps, RearviewStack  # noqa: E402
from support.cdk_stack import Synthesised, placeholder_tree, synthesise  # noqa: E402

pytestmark = [pytest.mark.infra, pytest.mark.slow]

EXISTING_ACL = "arn:aws:wafv2:us-east-1:123456789012:global/webacl/rearview-edge/0123abcd-0000-1111-2222-333344445555"
EDGE_TYPES = ("AWS::CloudFront::Distribution", "AWS::WAFv2::WebACL", "AWS::WAFv2::WebACLAssociation")


def _props(base: RearviewProps, **changes: Any) -> RearviewProps:
    return RearviewProps(**{**base.__dict__, **changes})


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> RearviewProps:
    return placeholder_tree(tmp_path_factory.mktemp("tree"))


@pytest.fixture(scope="module")
def without(base: RearviewProps) -> Synthesised:
    return synthesise(base)


@pytest.fixture(scope="module")
def with_waf(base: RearviewProps) -> Synthesised:
    """As `cdk synth -c rearview:waf=true -c rearview:wafRateLimit=750` would build it (the context's strings)."""
    context = {"rearview:waf": "true", "rearview:wafRateLimit": "750"}
    return synthesise(
        RearviewProps.from_context(context.get, functions_dir=base.functions_dir, layer_dir=base.layer_dir)
    )


def _of_type(synth: Synthesised, kind: str) -> dict[str, dict[str, Any]]:
    return {k: r for k, r in synth.resources.items() if r["Type"] == kind}


def _distribution(synth: Synthesised) -> dict[str, Any]:
    (distribution,) = _of_type(synth, "AWS::CloudFront::Distribution").values()
    return dict(distribution["Properties"]["DistributionConfig"])


def test_the_flag_off_deploys_no_edge(without: Synthesised) -> None:
    for kind in (*EDGE_TYPES, "AWS::CloudFront::CachePolicy"):
        assert not _of_type(without, kind), kind
    template = without.template.to_json()
    assert "EdgeUrl" not in template["Outputs"]
    assert set(template.get("Rules", {})) <= {"CheckBootstrapVersion"}


def test_the_web_acl_blocks_by_rate_and_by_amazons_managed_rules(with_waf: Synthesised) -> None:
    (acl,) = _of_type(with_waf, "AWS::WAFv2::WebACL").values()
    props = acl["Properties"]
    assert props["Scope"] == "CLOUDFRONT" and props["DefaultAction"] == {"Allow": {}}
    rules = {rule["Name"]: rule for rule in props["Rules"]}
    rate = rules["RateLimitPerIp"]
    assert rate["Statement"]["RateBasedStatement"] == {"AggregateKeyType": "IP", "EvaluationWindowSec": 300,
                                                       "Limit": 750}  # fmt: skip
    assert rate["Action"] == {"Block": {}} and rate["Priority"] == 0, "the rate rule runs first"
    assert set(MANAGED_RULE_GROUPS) == {
        "AWSManagedRulesCommonRuleSet",
        "AWSManagedRulesKnownBadInputsRuleSet",
        "AWSManagedRulesAmazonIpReputationList",
    }
    for group in MANAGED_RULE_GROUPS:
        statement = rules[group]["Statement"]["ManagedRuleGroupStatement"]
        assert (statement["VendorName"], statement["Name"]) == ("AWS", group)
        assert rules[group]["OverrideAction"] == {"None": {}}, "the group's own actions (block) apply"
    overrides = rules["AWSManagedRulesCommonRuleSet"]["Statement"]["ManagedRuleGroupStatement"]["RuleActionOverrides"]
    assert {o["Name"]: o["ActionToUse"] for o in overrides} == {name: {"Count": {}} for name in COUNTED_COMMON_RULES}
    assert sorted(rule["Priority"] for rule in props["Rules"]) == list(range(len(props["Rules"])))
    assert all(rule["VisibilityConfig"]["CloudWatchMetricsEnabled"] for rule in props["Rules"])


def test_the_distribution_carries_the_web_acl_and_forwards_to_the_api(with_waf: Synthesised) -> None:
    config = _distribution(with_waf)
    (acl_id,) = _of_type(with_waf, "AWS::WAFv2::WebACL")
    assert config["WebACLId"] == {"Fn::GetAtt": [acl_id, "Arn"]}, "the association: CloudFront names its web ACL"
    behavior = config["DefaultCacheBehavior"]
    assert behavior["ViewerProtocolPolicy"] == "https-only"
    assert set(behavior["AllowedMethods"]) == {"GET", "HEAD", "OPTIONS", "PUT", "PATCH", "POST", "DELETE"}
    (origin,) = config["Origins"]
    assert origin["CustomOriginConfig"]["OriginProtocolPolicy"] == "https-only"
    assert origin["CustomOriginConfig"]["OriginSSLProtocols"] == ["TLSv1.2"]
    assert with_waf.resolve(with_waf.stack.api.api.api_id) == origin["DomainName"]["Fn::Join"][1][0]
    (cache,) = _of_type(with_waf, "AWS::CloudFront::CachePolicy").values()
    cache_config = cache["Properties"]["CachePolicyConfig"]
    assert (cache_config["DefaultTTL"], cache_config["MinTTL"], cache_config["MaxTTL"]) == (0, 0, 1)
    key = cache_config["ParametersInCacheKeyAndForwardedToOrigin"]
    assert key["HeadersConfig"] == {"HeaderBehavior": "whitelist", "Headers": ["Authorization"]}
    outputs = with_waf.template.to_json()["Outputs"]
    assert "EdgeUrl" in outputs and "EdgeMcpUrl" in outputs


def test_a_web_acl_made_here_is_refused_outside_us_east_1(with_waf: Synthesised, base: RearviewProps) -> None:
    rules = with_waf.template.to_json()["Rules"]
    (assertion,) = next(rule for name, rule in rules.items() if name.startswith("EdgeWaf"))["Assertions"]
    assert assertion["Assert"] == {"Fn::Equals": [{"Ref": "AWS::Region"}, "us-east-1"]}
    assert "rearview:wafWebAclArn" in assertion["AssertDescription"]
    with pytest.raises(ValueError, match="only in us-east-1"):
        RearviewStack(cdk.App(), "InIreland", props=_props(base, waf=True), env=cdk.Environment(region="eu-west-1"))


def test_an_existing_web_acl_is_used_by_arn_in_any_region(base: RearviewProps) -> None:
    synth = synthesise(_props(base, waf=True, waf_web_acl_arn=EXISTING_ACL))
    assert not _of_type(synth, "AWS::WAFv2::WebACL"), "nothing made here: the web ACL lives in us-east-1"
    assert _distribution(synth)["WebACLId"] == EXISTING_ACL
    assert set(synth.template.to_json().get("Rules", {})) <= {"CheckBootstrapVersion"}


@pytest.mark.parametrize(
    "arn",
    [
        "arn:aws:wafv2:eu-west-1:123456789012:regional/webacl/rearview/0123abcd",
        "arn:aws:wafv2:eu-west-1:123456789012:global/webacl/rearview/0123abcd",
        "not-an-arn",
    ],
)
def test_a_web_acl_that_cloudfront_cannot_take_is_refused(arn: str) -> None:
    with pytest.raises(ValueError, match="CLOUDFRONT-scope"):
        check_web_acl_arn(arn)
    assert check_web_acl_arn(EXISTING_ACL) == EXISTING_ACL


def test_the_rate_limit_is_at_least_wafs_minimum(base: RearviewProps) -> None:
    with pytest.raises(ValueError, match="at least 10"):
        synthesise(_props(base, waf=True, waf_rate_limit=5))


def test_the_web_acl_alone_is_a_stack_pinned_to_us_east_1() -> None:
    from aws_cdk.assertions import Template

    from rearview_infra.edge import EdgeWebAclStack

    stack = EdgeWebAclStack(cdk.App(), "RearviewEdgeWaf", rate_limit=500)
    template = Template.from_stack(stack).to_json()
    assert stack.region == "us-east-1"
    (acl,) = [r for r in template["Resources"].values() if r["Type"] == "AWS::WAFv2::WebACL"]
    assert acl["Properties"]["Scope"] == "CLOUDFRONT"
    assert acl["Properties"]["Rules"][0]["Statement"]["RateBasedStatement"]["Limit"] == 500
    assert "WebAclArn" in template["Outputs"]


def _identity_sources(synth: Synthesised) -> list[str]:
    (authorizer,) = _of_type(synth, "AWS::ApiGatewayV2::Authorizer").values()
    return list(authorizer["Properties"]["IdentitySource"])


def test_behind_the_waf_the_api_takes_requests_only_through_cloudfront(with_waf: Synthesised) -> None:
    (secret_id,) = _of_type(with_waf, "AWS::SecretsManager::Secret")
    (origin,) = _distribution(with_waf)["Origins"]
    (header,) = origin["OriginCustomHeaders"]
    assert header["HeaderName"] == "x-rearview-origin"
    assert header["HeaderValue"] == {
        "Fn::Join": ["", ["{{resolve:secretsmanager:", {"Ref": secret_id}, ":SecretString:::}}"]]
    }, "a dynamic reference: the value is resolved at deploy, never written in the template"
    assert _identity_sources(with_waf) == ["$request.header.Authorization", "$request.header.x-rearview-origin"]
    assert with_waf.function("authorizer")["Environment"]["Variables"]["REARVIEW_AWS__ORIGIN_SECRET_ARN"] == {
        "Ref": secret_id
    }
    assert with_waf.holders("secretsmanager:GetSecretValue", {"Ref": secret_id}) == {"authorizer"}


def test_without_the_waf_or_with_the_api_left_open_there_is_no_origin_secret(
    without: Synthesised, base: RearviewProps
) -> None:
    assert _identity_sources(without) == ["$request.header.Authorization"]
    assert not _of_type(without, "AWS::SecretsManager::Secret")
    assert "REARVIEW_AWS__ORIGIN_SECRET_ARN" not in without.function("authorizer")["Environment"]["Variables"]
    open_api = synthesise(_props(base, waf=True, waf_origin_only=False))
    assert _identity_sources(open_api) == ["$request.header.Authorization"]
    assert not _of_type(open_api, "AWS::SecretsManager::Secret")
    assert "OriginCustomHeaders" not in _distribution(open_api)["Origins"][0]
