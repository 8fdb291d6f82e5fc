"""The cdk-nag findings this deployment accepts, each with its reason (the stack attaches each group to the
constructs it covers, `RearviewStack._accept_findings`); `make synth-check` (and tests/infra) fail on
any other finding of the AwsSolutions and Serverless packs.

A suppression names the constructs it covers and, for wildcard and managed-policy findings, exactly what it
accepts (`applies_to`): a new wildcard or managed policy is a new finding, not covered by an old reason."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from aws_cdk import Aspects
from cdk_nag import AwsSolutionsChecks, NagPackSuppression, NagSuppressions, RegexAppliesTo, ServerlessChecks
from constructs import IConstruct


@dataclass(frozen=True)
class Accepted:
    """One accepted finding: the rule, why, and (for IAM4/IAM5) the exact policy or resources it accepts."""

    rule: str
    reason: str
    applies_to: tuple[str, ...] = ()
    # Regular expressions over cdk-nag's finding data (logical ids differ per stack).
    applies_to_regex: tuple[str, ...] = ()

    def suppression(self) -> NagPackSuppression:
        targets: list[str | RegexAppliesTo] = [
            *self.applies_to,
            *(RegexAppliesTo(regex=r) for r in self.applies_to_regex),
        ]
        return NagPackSuppression(id=self.rule, reason=self.reason, applies_to=targets or None)


RUNTIME_PINNED = (
    "The functions run python3.13, the version the layer is built for and `make test` runs the functions' tests on "
    "(`make test-py313`); a newer runtime is adopted by changing layer.RUNTIME, the layer build and that test run "
    "together."
)

# Every function (and its role).
FUNCTIONS: tuple[Accepted, ...] = (
    Accepted(
        "AwsSolutions-IAM4",
        "AWSLambdaBasicExecutionRole grants only logs:CreateLogGroup, CreateLogStream and PutLogEvents, which every "
        "function needs to write its own log group.",
        applies_to=("Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/AWSLambdaBasicExecutionRole",),
    ),
    Accepted(
        "AwsSolutions-IAM5",
        "X-Ray's PutTraceSegments and PutTelemetryRecords and DynamoDB's ListStreams take no resource: '*' is the "
        "only form IAM accepts for them. Every other action names its resource.",
        applies_to=("Resource::*",),
    ),
    Accepted(
        "AwsSolutions-IAM5",
        "The table's global secondary indexes (by_time, by_created, unconsolidated) are queried by name; the "
        "statement is further limited by a dynamodb:LeadingKeys condition to the partition keys the function may "
        "touch (NS#*, UC#*, EXP#*, META; APIKEY#* for the key functions only).",
        applies_to_regex=(r"/^Resource::<StorageTable[0-9A-F]*\.Arn>\/index\/\*$/g",),
    ),
    Accepted(
        "AwsSolutions-IAM5",
        "With a customer-managed key, the grants of the table and the queues allow kms:GenerateDataKey* and "
        "kms:ReEncrypt* (the key's data-key variants) on that one key, whose ARN is the statement's resource.",
        applies_to=("Action::kms:GenerateDataKey*", "Action::kms:ReEncrypt*"),
    ),
    Accepted(
        "AwsSolutions-IAM5",
        "A managed domain authorises by request path: the documents and APIs under the one index "
        "(`<domain>/<index>/*`), nothing else of the domain.",
        applies_to_regex=(r"/^Resource::<SearchDomain[0-9A-F]*\.Arn>\/[a-z0-9-]+\/\*$/g",),
    ),
    Accepted("AwsSolutions-L1", RUNTIME_PINNED),
    Accepted("Serverless-LambdaLatestVersion", RUNTIME_PINNED),
    Accepted(
        "Serverless-LambdaDLQ",
        "No function is invoked asynchronously by a caller that could lose an event: HTTP functions and the "
        "authorizer answer API Gateway synchronously, the workers are polled from SQS (whose queues redrive to their "
        "DLQs) and the stream (whose failures go to the index sync failure queue), the schedule's target has its "
        "own DLQ, and CloudFormation reports a failed custom resource itself.",
    ),
    Accepted(
        "Serverless-LambdaEventSourceMappingDestination",
        "An SQS event source keeps failed messages on the queue, whose redrive policy moves them to its DLQ (the "
        "workers move them themselves on the last receive, with the reason); an on-failure destination applies "
        "to stream and Kafka sources, and index sync's stream source has one.",
    ),
)

# Queues that are dead-letter queues or on-failure destinations themselves.
DEAD_LETTER_QUEUES: tuple[Accepted, ...] = (
    Accepted(
        "Serverless-SQSRedrivePolicy",
        "A dead-letter queue (or a destination of failed events) holds what failed every retry; it has no "
        "dead-letter queue of its own, and an alarm fires on its first message.",
    ),
    Accepted(
        "AwsSolutions-SQS3",
        "This queue is a dead-letter destination (of the table stream's event source or of the schedule's "
        "EventBridge target), not a queue that needs one; an alarm fires on its first message.",
    ),
)

CODEDEPLOY_ROLES: tuple[Accepted, ...] = (
    Accepted(
        "AwsSolutions-IAM4",
        "AWSCodeDeployRoleForLambdaLimited is AWS's least-privilege role for CodeDeploy Lambda deployments: it "
        "updates aliases, reads the rollback alarms and invokes nothing else.",
        applies_to=("Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/AWSCodeDeployRoleForLambdaLimited",),
    ),
)

ALARM_TOPIC: tuple[Accepted, ...] = (
    Accepted(
        "Serverless-SNSRedrivePolicy",
        "The alarm topic's e-mail subscription: a message the mail server refused has no reader in a queue either; "
        "the alarm itself stays in ALARM (console, API) until it recovers.",
    ),
)

HEALTH_ROUTE: tuple[Accepted, ...] = (
    Accepted(
        "AwsSolutions-APIG4",
        "GET /v1/health is the unauthenticated liveness check (load balancers and uptime probes); it answers the "
        "version and the embedder's name, no tenant's data. Every other route has the API-key authorizer.",
    ),
)

# A managed OpenSearch domain (`rearview:search=domain`, the emulator's flavour).
MANAGED_DOMAIN: tuple[Accepted, ...] = (
    Accepted(
        "AwsSolutions-OS1",
        "The domain is reached over HTTPS with SigV4 from functions outside a VPC; putting it in a VPC would put every "
        "function there (NAT or endpoints for DynamoDB, SQS and Bedrock). Serverless is the production default.",
    ),
    Accepted(
        "AwsSolutions-OS3",
        "Access is by IAM identity policies on the functions' roles (SigV4), not by source IP: Lambda has no fixed "
        "addresses outside a VPC.",
    ),
    Accepted(
        "AwsSolutions-OS4",
        "One small data node for development and emulators; a production deployment uses OpenSearch Serverless.",
    ),
    Accepted(
        "AwsSolutions-OS5",
        "The domain has no resource policy: only principals granted by IAM identity policies (the functions' roles) "
        "can call it, and anonymous requests are refused.",
    ),
    Accepted("AwsSolutions-OS7", "A single-node development domain has no zones to spread over."),
    Accepted(
        "AwsSolutions-OS9",
        "Slow logs would copy users' memories (queries and documents) into CloudWatch Logs; the functions log their "
        "own search timings instead.",
    ),
)


# The optional CloudFront distribution in front of the API (`rearview:waf`, edge.py).
EDGE: tuple[Accepted, ...] = (
    Accepted(
        "AwsSolutions-CFR3",
        "Every request CloudFront lets through is in the API stage's access log (with the caller's IP), and what the "
        "WAF blocks is in its metrics and sampled requests; a standard-logging bucket would be a third copy, with a "
        "bucket, its policy and its retention to run. A deployment that wants edge logs adds one.",
    ),
    Accepted(
        "AwsSolutions-CFR4",
        "The distribution uses CloudFront's default *.cloudfront.net certificate, whose TLS policy CloudFront sets "
        "and cannot be changed; a minimum of TLSv1.2_2021 needs a custom domain with an ACM certificate in "
        "us-east-1, which is the deployer's to bring. The API's own endpoint, which the origin calls, is TLS 1.2.",
    ),
)


# The origin secret CloudFront sends and the authorizer checks (`rearview:wafOriginOnly`, edge.py).
EDGE_ORIGIN_SECRET: tuple[Accepted, ...] = (
    Accepted(
        "AwsSolutions-SMG4",
        "CloudFront reads the value at deploy (a dynamic reference in its origin's headers) and the authorizer at its "
        "cold start, so a scheduled rotation would break every request until the next deploy; it is rotated by "
        "putting a new value and redeploying. It only proves a request came through CloudFront: every request still "
        "needs an API key.",
    ),
)


def add_checks(scope: IConstruct) -> None:
    """Run the AwsSolutions and Serverless packs over `scope` at synthesis: an unsuppressed finding is an error
    annotation, which fails `cdk synth` and `cdk deploy`."""
    Aspects.of(scope).add(AwsSolutionsChecks())
    Aspects.of(scope).add(ServerlessChecks())


def suppress(constructs: Iterable[IConstruct], accepted: Sequence[Accepted]) -> None:
    """Attach these accepted findings to each of `constructs` and its children (the stack says which constructs
    each group covers: this module imports nothing of it)."""
    suppressions = [item.suppression() for item in accepted]
    for construct in constructs:
        NagSuppressions.add_resource_suppressions(construct, suppressions, apply_to_children=True)
