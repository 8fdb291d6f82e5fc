"""The optional customer-managed KMS key (`rearview:kmsKey=true`): one key for the table (and its stream), every
queue and dead-letter queue, the alarm topic, the log groups and the search collection (or domain).

Without it every one of them is still encrypted at rest, with AWS-owned or AWS-managed keys; the customer-managed key
adds what an audit asks for: a key policy you control, its use in CloudTrail, rotation every year, and the power to
revoke access to all the data at once. It costs $1 a month plus requests, and an OpenSearch Serverless collection
with its own key does not share OCUs with collections under other keys.

The functions are granted the key by the grants of what they use (the table's and the queues' grants include it).
The key policy adds the services that write into encrypted resources on their own behalf: CloudWatch Logs (the
log groups), CloudWatch alarms and AWS Budgets (publishing to the topic), EventBridge (the schedule's DLQ)."""

from __future__ import annotations

from aws_cdk import Aws, Duration, RemovalPolicy
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from constructs import Construct

# Services that put messages on the encrypted topic or queue themselves.
_PUBLISHERS = ("cloudwatch.amazonaws.com", "events.amazonaws.com", "budgets.amazonaws.com")


class DataKey(Construct):
    """A symmetric key with yearly rotation; kept with the data it protects unless `retain` is off (a deleted key
    makes whatever it encrypted unreadable), and then scheduled for deletion after the 30-day maximum window."""

    def __init__(self, scope: Construct, construct_id: str, *, retain: bool = True) -> None:
        super().__init__(scope, construct_id)
        self.key = kms.Key(
            self,
            "Key",
            description="Rearview: table, queues, topic, logs and search collection",
            enable_key_rotation=True,
            pending_window=Duration.days(30),
            removal_policy=RemovalPolicy.RETAIN if retain else RemovalPolicy.DESTROY,
        )
        self.key.add_to_resource_policy(
            iam.PolicyStatement(
                sid="CloudWatchLogsOfThisAccount",
                principals=[iam.ServicePrincipal(f"logs.{Aws.REGION}.amazonaws.com")],
                actions=["kms:Encrypt*", "kms:Decrypt*", "kms:ReEncrypt*", "kms:GenerateDataKey*", "kms:Describe*"],
                resources=["*"],
                conditions={
                    "ArnLike": {
                        "kms:EncryptionContext:aws:logs:arn": (
                            f"arn:{Aws.PARTITION}:logs:{Aws.REGION}:{Aws.ACCOUNT_ID}:log-group:*"
                        )
                    }
                },
            )
        )
        self.key.add_to_resource_policy(
            iam.PolicyStatement(
                sid="ServicesPublishingToEncryptedTopicAndQueues",
                principals=[iam.ServicePrincipal(service) for service in _PUBLISHERS],
                actions=["kms:Decrypt", "kms:GenerateDataKey*"],
                resources=["*"],
                conditions={"StringEquals": {"aws:SourceAccount": Aws.ACCOUNT_ID}},
            )
        )
