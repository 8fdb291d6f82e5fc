"""Creating the template's table, queues and schedule on the moto endpoint, as CloudFormation would (and finding
them again when a previous run, or the moto container, created them already).

Physical names are stable across runs (`<stack>-<logical id>`, `.fifo` for FIFO queues), so queue URLs and the
table name stay the same, and the state restored from the data directory lands where the functions look.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from rearview.emulator.template import ACCOUNT, REGION, Resolver, Template, TemplateError

# The queue attributes CloudFormation's AWS::SQS::Queue takes and SQS's CreateQueue names alike.
_QUEUE_ATTRIBUTES = (
    "ContentBasedDeduplication",
    "DeduplicationScope",
    "DelaySeconds",
    "FifoQueue",
    "FifoThroughputLimit",
    "MaximumMessageSize",
    "MessageRetentionPeriod",
    "ReceiveMessageWaitTimeSeconds",
    "VisibilityTimeout",
)
_TABLE_FIELDS = ("AttributeDefinitions", "KeySchema", "GlobalSecondaryIndexes", "LocalSecondaryIndexes", "BillingMode")


@dataclass(frozen=True)
class Queue:
    logical_id: str
    name: str
    url: str
    arn: str
    fifo: bool
    visibility_timeout: int
    max_receive_count: int | None
    dead_letter_arn: str | None


@dataclass(frozen=True)
class Table:
    logical_id: str
    name: str
    arn: str
    stream_arn: str | None
    ttl_attribute: str | None


@dataclass
class Deployment:
    """The emulated resources, by logical id; `lookup` answers the template's Ref and Fn::GetAtt."""

    template: Template
    tables: dict[str, Table] = field(default_factory=dict)
    queues: dict[str, Queue] = field(default_factory=dict)
    search_endpoint: str = ""
    # True when this run created the table (a fresh moto): the saved state is then restored into it.
    created: bool = False

    def lookup(self, logical_id: str, attribute: str) -> Any:
        if logical_id in self.tables:
            table = self.tables[logical_id]
            return {"Ref": table.name, "Arn": table.arn, "StreamArn": table.stream_arn}[attribute]
        if logical_id in self.queues:
            queue = self.queues[logical_id]
            return {"Ref": queue.url, "Arn": queue.arn, "QueueName": queue.name, "QueueUrl": queue.url}[attribute]
        resource = self.template.resource(logical_id)
        if resource.type == "AWS::Lambda::Function":
            name = self.function_name(logical_id)
            arn = f"arn:aws:lambda:{REGION}:{ACCOUNT}:function:{name}"
            return {"Ref": name, "Arn": arn}[attribute]
        if attribute == "Arn" or attribute.endswith(("Arn", ".Arn")):
            # An ARN in a role's policy (a domain, a secret, a topic): well formed, as IAM checks policies.
            return f"arn:aws:{_service_of(resource.type)}:{REGION}:{ACCOUNT}:emulated/{logical_id}"
        if resource.type.startswith(("AWS::OpenSearchService::", "AWS::OpenSearchServerless::")):
            return self.search_endpoint
        # Anything else (a role, a topic): a name that says it is emulated; no function reads it.
        return f"emulated-{logical_id}-{attribute}"

    def function_name(self, logical_id: str) -> str:
        return f"{self.template.stack_name}-{logical_id}"

    def queue_by_arn(self, arn: str) -> Queue:
        for queue in self.queues.values():
            if queue.arn == arn:
                return queue
        raise TemplateError(f"no emulated queue has the ARN {arn}")

    def resolver(self) -> Resolver:
        return Resolver(self.lookup)


def _service_of(resource_type: str) -> str:
    """`AWS::OpenSearchService::Domain` -> `opensearchservice`: the service part of an emulated resource's ARN."""
    return resource_type.split("::")[1].lower() if resource_type.count("::") == 2 else "emulated"


def deploy(template: Template, dynamodb: Any, sqs: Any, events: Any, search_endpoint: str) -> Deployment:
    """Create (or find) the template's queues, table and schedule rules; the deployment that names them."""
    deployment = Deployment(template, search_endpoint=search_endpoint)
    resolver = deployment.resolver()
    # Dead-letter queues first: a redrive policy names its target's ARN.
    pending = list(template.resources("AWS::SQS::Queue"))
    pending.sort(key=lambda r: "RedrivePolicy" in r.properties)
    for resource in pending:
        deployment.queues[resource.logical_id] = _queue(template, resource.logical_id, resolver, sqs)
    for resource in template.resources("AWS::DynamoDB::Table"):
        table, created = _table(template, resource.logical_id, dynamodb)
        deployment.tables[resource.logical_id] = table
        deployment.created = deployment.created or created
    for schedule in template.schedules():
        events.put_rule(
            Name=f"{template.stack_name}-{schedule.logical_id}",
            ScheduleExpression=schedule.expression,
            State="ENABLED" if schedule.enabled else "DISABLED",
        )
    return deployment


def _queue(template: Template, logical_id: str, resolver: Resolver, sqs: Any) -> Queue:
    props = resolver.resolve(template.resource(logical_id).properties)
    fifo = bool(props.get("FifoQueue"))
    name = props.get("QueueName") or f"{template.stack_name}-{logical_id}" + (".fifo" if fifo else "")
    attributes = {k: _attribute(props[k]) for k in _QUEUE_ATTRIBUTES if k in props}
    redrive = props.get("RedrivePolicy")
    if redrive:
        attributes["RedrivePolicy"] = json.dumps(redrive)
    url = sqs.create_queue(QueueName=name, Attributes=attributes)["QueueUrl"]
    arn = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
    return Queue(
        logical_id=logical_id,
        name=name,
        url=url,
        arn=arn,
        fifo=fifo,
        visibility_timeout=int(props.get("VisibilityTimeout", 30)),
        max_receive_count=int(redrive["maxReceiveCount"]) if redrive else None,
        dead_letter_arn=str(redrive["deadLetterTargetArn"]) if redrive else None,
    )


def _attribute(value: Any) -> str:
    return str(value).lower() if isinstance(value, bool) else str(value)


def _table(template: Template, logical_id: str, dynamodb: Any) -> tuple[Table, bool]:
    """The table, created unless it exists; and whether it was created now."""
    props = template.resource(logical_id).properties
    name = props.get("TableName") or f"{template.stack_name}-{logical_id}"
    request: dict[str, Any] = {k: props[k] for k in _TABLE_FIELDS if k in props}
    stream = props.get("StreamSpecification")
    if stream:
        request["StreamSpecification"] = {"StreamEnabled": True, "StreamViewType": stream["StreamViewType"]}
    if request.get("BillingMode") != "PAY_PER_REQUEST":
        request["ProvisionedThroughput"] = props.get(
            "ProvisionedThroughput", {"ReadCapacityUnits": 5, "WriteCapacityUnits": 5}
        )
    existing = dynamodb.list_tables().get("TableNames", [])
    created = name not in existing
    if created:
        dynamodb.create_table(TableName=name, **request)
        dynamodb.get_waiter("table_exists").wait(TableName=name)
    ttl = props.get("TimeToLiveSpecification") or {}
    ttl_attribute = ttl.get("AttributeName") if ttl.get("Enabled") else None
    if ttl_attribute and created:
        dynamodb.update_time_to_live(
            TableName=name, TimeToLiveSpecification={"Enabled": True, "AttributeName": ttl_attribute}
        )
    description = dynamodb.describe_table(TableName=name)["Table"]
    return Table(logical_id, name, description["TableArn"], description.get("LatestStreamArn"), ttl_attribute), created
