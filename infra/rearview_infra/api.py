"""The HTTP API (API Gateway v2, payload format 2.0): every route of `rearview.api.routes.ROUTE_TABLE`, each sent to
the `live` alias of the function that serves it, behind the API-key authorizer unless the table says the function
answers an unauthenticated caller itself (the health check). `POST /mcp` is behind the authorizer too, unless the
deployment turns it off there (`rearview:mcpGatewayAuthorizer=false`: MCP's own 401 with its `WWW-Authenticate`
challenge, at the price of starting the function for every unauthenticated request).

The table is imported, not repeated: `rearview.api.routes` needs only the standard library, so synthesis needs none
of the library's dependencies (app.py puts `layers/` on the path)."""

from __future__ import annotations

import json
from collections.abc import Mapping

import jsii
from aws_cdk import Duration, RemovalPolicy
from aws_cdk import aws_apigateway as apigateway_v1
from aws_cdk import aws_apigatewayv2 as apigwv2
from aws_cdk import aws_apigatewayv2_authorizers as authorizers
from aws_cdk import aws_apigatewayv2_integrations as integrations
from aws_cdk import aws_kms as kms
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from constructs import Construct

from rearview.api.routes import MCP_ROUTE, ROUTE_TABLE, Route

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


def _authorized(route: Route, mcp_gateway_authorizer: bool) -> bool:
    """Whether the gateway's key authorizer runs before the route's function."""
    if route == MCP_ROUTE:
        return route.gateway_authorizer and mcp_gateway_authorizer
    return route.gateway_authorizer


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
        functions: Mapping[str, lambda_.IFunction],
        authorizer_function: lambda_.IFunction,
        throttle_rate: int = 100,
        throttle_burst: int = 200,
        mcp_gateway_authorizer: bool = True,
        log_key: kms.IKey | None = None,
        edge_header: str | None = None,
    ) -> None:
        super().__init__(scope, construct_id)
        # `edge_header`: the secret header CloudFront adds (edge.py); as a second identity source, a request without
        # it is refused by the gateway, and the authorizer checks its value (cached with the key, per pair).
        identity = [IDENTITY_SOURCE, *([f"$request.header.{edge_header}"] if edge_header else [])]
        self.authorizer = authorizers.HttpLambdaAuthorizer(
            "ApiKeyAuthorizer",
            authorizer_function,
            authorizer_name="rearview-api-key",
            response_types=[authorizers.HttpLambdaResponseType.SIMPLE],
            identity_source=identity,
            results_cache_ttl=AUTHORIZER_CACHE_TTL,
        )
        # Routes are protected by default; the table says which opt out.
        self.api = apigwv2.HttpApi(
            self,
            "HttpApi",
            description="Rearview: long-term memory for LLM agents",
            create_default_stage=False,
            default_authorizer=self.authorizer,
        )
        access_logs = logs.LogGroup(
            self,
            "AccessLogs",
            retention=logs.RetentionDays.ONE_MONTH,
            encryption_key=log_key,
            removal_policy=RemovalPolicy.DESTROY,
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
        for route in ROUTE_TABLE:
            integration = integrations_by_function.get(route.function)
            if integration is None:
                integration = integrations.HttpLambdaIntegration(
                    f"{route.function}-integration", functions[route.function]
                )
                integrations_by_function[route.function] = integration
            self.api.add_routes(
                path=route.gateway_path,
                methods=[apigwv2.HttpMethod(route.method)],
                integration=integration,
                authorizer=None if _authorized(route, mcp_gateway_authorizer) else apigwv2.HttpNoneAuthorizer(),
            )

    @property
    def url(self) -> str:
        """The stage's base URL (`https://<id>.execute-api.<region>.amazonaws.com/`)."""
        return self.stage.url
