"""SQS for consolidation jobs: the FIFO job queue (ConsolidationJobs) and its FIFO dead-letter queue (DeadLetters).

- `MessageGroupId` is the namespace: SQS FIFO never hands out a group's next message while one is in flight, so the
  jobs of one namespace run one at a time and in order, while other namespaces run in parallel (the runner's lease
  guards what comes from elsewhere, such as a manual run).
- `MessageDeduplicationId` folds repeated triggers: SQS drops a message whose id it has seen in the last five
  minutes. A failure-streak job is identified by its namespace and its episodes (the write worker and the stream
  see the same streak), an extraction likewise (a write delivered twice asks for the same turns); the others by
  namespace, reason and the five-minute bucket of `requested_at` (a count trigger that fires on every write past
  the threshold sends one job per bucket, not one per write).
- The body is the job's JSON (`consolidation_job_body`).

Dead letters carry the original body unchanged, with message attributes `reason` (poison, retries_exhausted) and
`error`, in the namespace's message group when the body names one.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from rearview.domain.hindsight_runs import ConsolidationJob, consolidation_job_body
from rearview.domain.write import MAX_ERROR_CHARS
from rearview.settings import AwsSettings

# SQS FIFO's deduplication interval.
DEDUP_WINDOW_SECONDS = 300
# SQS's limit for a message group id; a longer namespace (up to 259 characters) is grouped by its hash.
MAX_GROUP_ID_CHARS = 128
# The group of a dead letter whose body names no namespace.
UNKNOWN_GROUP = "unparsed"


def _client(client: Any, settings: AwsSettings | None) -> Any:
    if client is not None:
        return client
    from rearview.adapters.aws_clients import boto3_client

    return boto3_client("sqs", settings)


def _digest(*parts: str) -> str:
    return hashlib.sha256("\n".join(parts).encode("utf-8")).hexdigest()


def message_group_id(namespace: str) -> str:
    """The namespace itself (every namespace character is allowed), or its hash when it is too long."""
    return namespace if len(namespace) <= MAX_GROUP_ID_CHARS else _digest(namespace)


def deduplication_id(job: ConsolidationJob) -> str:
    """The id under which SQS folds repeats of `job` (see the module's docstring)."""
    if job.reason in ("failure_streak", "extract"):
        return f"{job.reason}-{_digest(job.namespace, *sorted(job.episode_ids))}"
    bucket = int(job.requested_at.timestamp()) // DEDUP_WINDOW_SECONDS
    return f"{job.reason}-{_digest(job.namespace, job.reason, str(bucket))}"


class SqsConsolidationJobs:
    """ConsolidationJobs on an SQS FIFO queue."""

    def __init__(self, queue_url: str, *, client: Any = None, settings: AwsSettings | None = None) -> None:
        self.queue_url = queue_url
        self._client = _client(client, settings)

    def send(self, job: ConsolidationJob) -> None:
        self._client.send_message(
            QueueUrl=self.queue_url,
            MessageBody=consolidation_job_body(job),
            MessageGroupId=message_group_id(job.namespace),
            MessageDeduplicationId=deduplication_id(job),
        )


class SqsConsolidationDeadLetters:
    """DeadLetters on the consolidation queue's FIFO dead-letter queue (the one its redrive policy names)."""

    def __init__(self, queue_url: str, *, client: Any = None, settings: AwsSettings | None = None) -> None:
        self.queue_url = queue_url
        self._client = _client(client, settings)

    def send(self, body: str, reason: str, error: str) -> None:
        """Park the original body with `reason` and `error` as message attributes."""
        self._client.send_message(
            QueueUrl=self.queue_url,
            MessageBody=body,
            MessageGroupId=message_group_id(_namespace_in(body) or UNKNOWN_GROUP),
            # The same body parked twice for the same reason (a redelivered last receive) is one dead letter.
            MessageDeduplicationId=_digest(reason, body),
            MessageAttributes={
                "reason": {"DataType": "String", "StringValue": reason},
                "error": {"DataType": "String", "StringValue": error[:MAX_ERROR_CHARS] or "-"},
            },
        )


def _namespace_in(body: str) -> str | None:
    """The `namespace` a body names, if it is a JSON object naming a non-empty one of allowed characters."""
    try:
        value = json.loads(body).get("namespace")
    except (ValueError, AttributeError):
        return None
    if isinstance(value, str) and value and all(c.isascii() and (c.isalnum() or c in "_.@-:") for c in value):
        return value
    return None
