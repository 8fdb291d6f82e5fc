"""The HTTP API (API Gateway v2, payload format 2.0): the route table of `rearview.api.http` plus `POST /mcp`,
each route sent to the function that serves it, all behind the API-key authorizer except the health check and
`POST /mcp` (whose function checks the key itself, to answer MCP's 401 challenge).

The route table is repeated here rather than imported, so that synthesis needs none of the library's
dependencies; tests/infra checks that the two agree."""

from __future__ import annotations

import json

import jsii
from aws_cdk import Duration, RemovalPolicy
from aws_cdk import aws_apigateway as apigateway_v1
from aws_cdk import aws_apigatewayv2 as apigwv2
from aws_cdk import aws_apigatewayv2_authorizers as authorizers
from aws_cdk import aws_apigatewayv2_integrations as integrations
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from constructs import Construct

HEALTH_ROUTE = ("GET", "/v1/health")
# The MCP route authenticates in its function: an HTTP API Lambda authorizer can only deny with a bare 401/403,
# while MCP clients need the 401's `WWW-Authenticate: Bearer` challenge (rearview.api.mcp_http).
MCP_ROUTE = ("POST", "/mcp")
_UNAUTHORIZED_ROUTES = (HEALTH_ROUTE, MCP_ROUTE)
_NS = "/v1/namespaces/{ns}"

# (method, path in API Gateway syntax, function name). GET memory and stats are reads, so recall serves them.
ROUTE_TARGETS: tuple[tuple[str, str, str], ...] = (
    (*HEALTH_ROUTE, "recall"),
    ("PUT", f"{_NS}/sessions/{{sid}}/working/{{key}}", "write"),
    ("GET", f"{_NS}/sessions/{{sid}}/working", "write"),
    ("DELETE", f"{_NS}/sessions/{{sid}}/working", "write"),
    ("POST", f"{_NS}/memories", "write"),
    ("POST", f"{_NS}/memories/batch", "write"),
    ("GET", f"{_NS}/memories/{{id}}", "recall"),
    ("DELETE", f"{_NS}/memories/{{id}}", "forget"),
    ("POST", f"{_NS}/recall", "recall"),
    ("POST", f"{_NS}/forget", "forget"),
    ("POST", f"{_NS}/consolidate", "consolidate"),
    ("GET", f"{_NS}/stats", "recall"),
    # API key administration (admin permission, checked by the function): reads and writes `APIKEY#` items,
    # which the write function's table grant covers.
    ("POST", "/v1/keys", "write"),
    ("GET", "/v1/keys", "write"),
    ("DELETE", "/v1/keys/{key_id}", "write"),
    ("GET", "/openapi.json", "recall"),
    ("GET", "/docs", "recall"),
    # Stateless Streamable HTTP: only POST carries JSON-RPC; a GET (server-sent event stream) is not offered.
    (*MCP_ROUTE, "mcp"),
)

# The authorizer's answer is cached per Authorization header: a revoked key keeps working at most this long.
AUTHORIZER_CACHE_TTL = Duration.seconds(300)
IDENTITY_SOURCE = "$request.header.Authorization"

# One JSON line per request; never the Authorization header or bodies.
_ACCESS_LOG_FIELDS = {
    "requestId": "$context.requestId",
    "ip": "$context.identity.sourceIp",
    "requestTime": "$context.requestTime",
    "routeKey": "$context.routeKey",
    "status": "$context.status",
    "responseLength": "$context.responseLength",
    "latencyMs": "$context.responseLatency",
    "integrationLatencyMs": "$context.integrationLatency",
    "integrationError": "$context.integrationErrorMessage",
    "authorizerError": "$context.authorizer.error",
}


@jsii.implements(apigwv2.IAccessLogSettings)
class _AccessLogSettings:
    def __init__(self, log_group: logs.ILogGroup) -> None:
        self._destination = apigwv2.LogGroupLogDestination(log_group)

    @property
    def destination(self) -> apigwv2.IAccessLogDestination:
        return self._destination

    @property
    def format(self) -> apigateway_v1.AccessLogFormat:
        return apigateway_v1.AccessLogFormat.custom(json.dumps(_ACCESS_LOG_FIELDS))


class RearviewHttpApi(Construct):
    """The HTTP API with its `$default` stage (auto-deployed, throttled, access-logged)."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        functions: dict[str, lambda_.Function],
        authorizer_function: lambda_.IFunction,
        throttle_rate: int = 100,
        throttle_burst: int = 200,
    ) -> None:
        super().__init__(scope, construct_id)
        self.authorizer = authorizers.HttpLambdaAuthorizer(
            "ApiKeyAuthorizer",
            authorizer_function,
            authorizer_name="rearview-api-key",
            response_types=[authorizers.HttpLambdaResponseType.SIMPLE],
            identity_source=[IDENTITY_SOURCE],
            results_cache_ttl=AUTHORIZER_CACHE_TTL,
        )
        # Routes are protected by default; the health check and /mcp opt out explicitly.
        self.api = apigwv2.HttpApi(
            self,
            "HttpApi",
            description="Rearview: long-term memory for LLM agents",
            create_default_stage=False,
            default_authorizer=self.authorizer,
        )
        access_logs = logs.LogGroup(
            self, "AccessLogs", retention=logs.RetentionDays.ONE_MONTH, removal_policy=RemovalPolicy.DESTROY
        )
        self.stage = apigwv2.HttpStage(
            self,
            "DefaultStage",
            http_api=self.api,
            stage_name="$default",
            auto_deploy=True,
            throttle=apigwv2.ThrottleSettings(rate_limit=throttle_rate, burst_limit=throttle_burst),
            access_log_settings=_AccessLogSettings(access_logs),
        )

        integrations_by_function: dict[str, integrations.HttpLambdaIntegration] = {}
        for method, path, function_name in ROUTE_TARGETS:
            integration = integrations_by_function.get(function_name)
            if integration is None:
                integration = integrations.HttpLambdaIntegration(
                    f"{function_name}-integration", functions[function_name]
                )
                integrations_by_function[function_name] = integration
            self.api.add_routes(
                path=path,
                methods=[apigwv2.HttpMethod(method)],
                integration=integration,
                authorizer=apigwv2.HttpNoneAuthorizer() if (method, path) in _UNAUTHORIZED_ROUTES else None,
            )

    @property
    def url(self) -> str:
        """The stage's base URL (`https://<id>.execute-api.<region>.amazonaws.com/`)."""
        return self.stage.url
