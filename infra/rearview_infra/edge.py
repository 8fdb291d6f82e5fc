"""The optional edge (`-c rearview:waf=true`): a CloudFront distribution in front of the HTTP API, with an AWS WAF
web ACL. HTTP APIs cannot take a web ACL themselves (only REST APIs, ALBs, AppSync, Cognito and CloudFront can), so
the WAF sits on CloudFront.

- The web ACL: a rate-based rule (requests per client IP in 5 minutes, `rearview:wafRateLimit`), Amazon's IP
  reputation list, the common rule set and the known-bad-inputs rule set. Two rules of the common set only count:
  `SizeRestrictions_BODY` (it blocks bodies over 8 KB; the API takes batches up to 1 MiB and refuses larger itself)
  and `CrossSiteScripting_BODY` (memories are text an agent may quote HTML or code in; the API never renders them
  as HTML, and the inspector escapes them).
- A CLOUDFRONT-scope web ACL must live in us-east-1. In a stack deployed there the web ACL is created here; a
  CloudFormation rule refuses the deployment anywhere else (an environment-agnostic stack does not know its region
  at synthesis). Elsewhere, give an existing web ACL of scope CLOUDFRONT with `-c rearview:wafWebAclArn=arn:...`
  (create it in us-east-1: infra/README.md shows how, with this app).
- CloudFront forwards every method, the query string and the viewer's headers but Host (API Gateway answers only to
  its own name); `Authorization` must be in the cache key to be forwarded at all, and the cache policy keeps nothing
  longer than a second (the API sends no caching headers, so nothing is cached).

With `rearview:wafOriginOnly` (the default when the WAF is on), CloudFront adds a secret header
(`x-rearview-origin`, a Secrets Manager secret made at deploy) to every request it forwards, and the gateway
authorizer requires it: a request sent to the API's own URL, which would skip the WAF, is refused (401/403). The
public routes (the health check, the inspector's static files) answer there still; they hold no data.
"""

from __future__ import annotations

import re

from aws_cdk import Aws, CfnOutput, CfnRule, CfnRuleAssertion, Duration, Environment, Fn, Stack, Token
from aws_cdk import aws_cloudfront as cloudfront
from aws_cdk import aws_cloudfront_origins as origins
from aws_cdk import aws_kms as kms
from aws_cdk import aws_secretsmanager as secretsmanager
from aws_cdk import aws_wafv2 as wafv2
from constructs import Construct

from rearview.api.routes import EDGE_ORIGIN_HEADER

# The region where every CLOUDFRONT-scope web ACL lives.
WAF_REGION = "us-east-1"
# Requests one client IP may send in 5 minutes before the rate rule blocks it (AWS's minimum is 10).
DEFAULT_WAF_RATE_LIMIT = 2000
MIN_WAF_RATE_LIMIT = 10
# The common rule set's rules that only count here (see the module docstring).
COUNTED_COMMON_RULES = ("SizeRestrictions_BODY", "CrossSiteScripting_BODY")
MANAGED_RULE_GROUPS = (
    "AWSManagedRulesAmazonIpReputationList",
    "AWSManagedRulesCommonRuleSet",
    "AWSManagedRulesKnownBadInputsRuleSet",
)
_WEB_ACL_ARN = re.compile(r"^arn:aws[a-z-]*:wafv2:us-east-1:\d{12}:global/webacl/[\w-]+/[\w-]+$")


def check_web_acl_arn(arn: str) -> str:
    """A CLOUDFRONT-scope web ACL's ARN (`arn:aws:wafv2:us-east-1:<account>:global/webacl/<name>/<id>`)."""
    if not _WEB_ACL_ARN.match(arn):
        raise ValueError(
            "rearview:wafWebAclArn must be a CLOUDFRONT-scope web ACL, which lives in us-east-1: "
            f"arn:aws:wafv2:us-east-1:<account>:global/webacl/<name>/<id> (got {arn[:200]!r})"
        )
    return arn


def _visibility(name: str) -> wafv2.CfnWebACL.VisibilityConfigProperty:
    return wafv2.CfnWebACL.VisibilityConfigProperty(
        cloud_watch_metrics_enabled=True, metric_name=name, sampled_requests_enabled=True
    )


def _managed_rule(priority: int, group: str) -> wafv2.CfnWebACL.RuleProperty:
    counted = COUNTED_COMMON_RULES if group == "AWSManagedRulesCommonRuleSet" else ()
    overrides = [
        wafv2.CfnWebACL.RuleActionOverrideProperty(
            name=rule, action_to_use=wafv2.CfnWebACL.RuleActionProperty(count={})
        )
        for rule in counted
    ]
    return wafv2.CfnWebACL.RuleProperty(
        name=group,
        priority=priority,
        statement=wafv2.CfnWebACL.StatementProperty(
            managed_rule_group_statement=wafv2.CfnWebACL.ManagedRuleGroupStatementProperty(
                vendor_name="AWS", name=group, rule_action_overrides=overrides or None
            )
        ),
        override_action=wafv2.CfnWebACL.OverrideActionProperty(none={}),
        visibility_config=_visibility(group),
    )


class EdgeWebAcl(Construct):
    """The CLOUDFRONT-scope web ACL (deployable only in us-east-1)."""

    def __init__(self, scope: Construct, construct_id: str, *, rate_limit: int = DEFAULT_WAF_RATE_LIMIT) -> None:
        super().__init__(scope, construct_id)
        if rate_limit < MIN_WAF_RATE_LIMIT:
            raise ValueError(f"rearview:wafRateLimit must be at least {MIN_WAF_RATE_LIMIT} (got {rate_limit})")
        rate_rule = wafv2.CfnWebACL.RuleProperty(
            name="RateLimitPerIp",
            priority=0,
            statement=wafv2.CfnWebACL.StatementProperty(
                rate_based_statement=wafv2.CfnWebACL.RateBasedStatementProperty(
                    limit=rate_limit, aggregate_key_type="IP", evaluation_window_sec=300
                )
            ),
            action=wafv2.CfnWebACL.RuleActionProperty(block={}),
            visibility_config=_visibility("RateLimitPerIp"),
        )
        self.web_acl = wafv2.CfnWebACL(
            self,
            "WebAcl",
            scope="CLOUDFRONT",
            default_action=wafv2.CfnWebACL.DefaultActionProperty(allow={}),
            visibility_config=_visibility("RearviewEdge"),
            rules=[rate_rule, *(_managed_rule(i + 1, group) for i, group in enumerate(MANAGED_RULE_GROUPS))],
        )
        region = Stack.of(self).region
        if not Token.is_unresolved(region) and region != WAF_REGION:
            raise ValueError(
                f"rearview:waf: a CLOUDFRONT web ACL cannot be created in {region}, only in {WAF_REGION}; pass "
                "-c rearview:wafWebAclArn=<the ARN of one made there>"
            )
        CfnRule(
            self,
            "InUsEast1",
            assertions=[
                CfnRuleAssertion(
                    assert_=Fn.condition_equals(Aws.REGION, WAF_REGION),
                    assert_description=(
                        "rearview:waf creates a CLOUDFRONT web ACL, which only us-east-1 can hold: deploy this stack "
                        "in us-east-1, or create the web ACL there and pass -c rearview:wafWebAclArn=<its ARN>"
                    ),
                )
            ],
        )

    @property
    def arn(self) -> str:
        return self.web_acl.attr_arn


class ApiEdge(Construct):
    """CloudFront in front of the HTTP API, with a web ACL: this stack's own (`web_acl_arn` None, us-east-1 only)
    or an existing one."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        api_id: str,
        web_acl_arn: str | None = None,
        rate_limit: int = DEFAULT_WAF_RATE_LIMIT,
        origin_secret: secretsmanager.ISecret | None = None,
    ) -> None:
        super().__init__(scope, construct_id)
        self.web_acl: EdgeWebAcl | None = None
        if web_acl_arn is None:
            self.web_acl = EdgeWebAcl(self, "Waf", rate_limit=rate_limit)
            web_acl_arn = self.web_acl.arn
        else:
            check_web_acl_arn(web_acl_arn)
        origin = origins.HttpOrigin(
            f"{api_id}.execute-api.{Aws.REGION}.{Aws.URL_SUFFIX}",
            protocol_policy=cloudfront.OriginProtocolPolicy.HTTPS_ONLY,
            origin_ssl_protocols=[cloudfront.OriginSslPolicy.TLS_V1_2],
            read_timeout=Duration.seconds(30),
            # The secret the gateway authorizer checks (a dynamic reference: resolved at deploy, not in the template).
            custom_headers=(
                {EDGE_ORIGIN_HEADER: origin_secret.secret_value.unsafe_unwrap()} if origin_secret is not None else None
            ),
        )
        # Authorization reaches the origin only as part of the cache key; nothing stays cached over a second.
        cache_policy = cloudfront.CachePolicy(
            self,
            "PassThrough",
            comment="Rearview API: Authorization in the key (so it is forwarded), nothing kept over a second",
            default_ttl=Duration.seconds(0),
            min_ttl=Duration.seconds(0),
            max_ttl=Duration.seconds(1),
            header_behavior=cloudfront.CacheHeaderBehavior.allow_list("Authorization"),
            query_string_behavior=cloudfront.CacheQueryStringBehavior.all(),
            cookie_behavior=cloudfront.CacheCookieBehavior.none(),
        )
        self.distribution = cloudfront.Distribution(
            self,
            "Distribution",
            comment="Rearview API behind AWS WAF",
            default_behavior=cloudfront.BehaviorOptions(
                origin=origin,
                allowed_methods=cloudfront.AllowedMethods.ALLOW_ALL,
                viewer_protocol_policy=cloudfront.ViewerProtocolPolicy.HTTPS_ONLY,
                cache_policy=cache_policy,
                origin_request_policy=cloudfront.OriginRequestPolicy.ALL_VIEWER_EXCEPT_HOST_HEADER,
            ),
            price_class=cloudfront.PriceClass.PRICE_CLASS_100,
            http_version=cloudfront.HttpVersion.HTTP2_AND_3,
            web_acl_id=web_acl_arn,
        )

    @property
    def url(self) -> str:
        return f"https://{self.distribution.distribution_domain_name}/"


def origin_secret(scope: Construct, construct_id: str, key: kms.IKey | None) -> secretsmanager.Secret:
    """The secret CloudFront sends as EDGE_ORIGIN_HEADER and the authorizer compares: 48 random letters and digits,
    made at deploy (never in the template). Rotating it is a redeploy after replacing the secret's value."""
    return secretsmanager.Secret(
        scope,
        construct_id,
        description="Rearview: the header CloudFront sends to the API, which the gateway authorizer checks",
        encryption_key=key,
        generate_secret_string=secretsmanager.SecretStringGenerator(
            exclude_punctuation=True, include_space=False, password_length=48
        ),
    )


class EdgeWebAclStack(Stack):
    """The web ACL alone, in us-east-1: for a Rearview stack in another region, which then takes the `WebAclArn`
    output as `rearview:wafWebAclArn` (`python infra/app.py -c rearview:wafWebAclStack=true`, infra/README.md)."""

    def __init__(self, scope: Construct, construct_id: str, *, rate_limit: int = DEFAULT_WAF_RATE_LIMIT) -> None:
        super().__init__(
            scope,
            construct_id,
            env=Environment(region=WAF_REGION),
            description="Rearview: the CLOUDFRONT web ACL for a Rearview API in another region",
        )
        self.web_acl = EdgeWebAcl(self, "Waf", rate_limit=rate_limit)
        CfnOutput(self, "WebAclArn", value=self.web_acl.arn)
