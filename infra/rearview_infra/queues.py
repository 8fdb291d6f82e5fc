"""The queues: the asynchronous write path's standard write queue and its dead-letter queue, the queue where
failed stream batches of index sync land, and Hindsight's FIFO consolidation queue with its FIFO dead-letter
queue.

Every queue is encrypted (SSE-SQS, or the deployment's customer-managed key when there is one) and refuses plain
HTTP. The dead-letter queues hold work that failed every retry: they are kept when the stack is deleted (`retain`),
so that nothing waiting to be redriven goes with it."""

from __future__ import annotations

from dataclasses import dataclass

from aws_cdk import Duration, RemovalPolicy
from aws_cdk import aws_kms as kms
from aws_cdk import aws_sqs as sqs
from constructs import Construct

# How many receives a write message gets before it goes to the DLQ. The worker reads the same number
# (`REARVIEW_AWS__MAX_RECEIVE_COUNT`): on the last receive it moves the message to the DLQ itself, with the
# reason, instead of letting SQS move it without one.
DEFAULT_MAX_RECEIVE_COUNT = 5
# AWS's advice for an SQS event source: visibility timeout at least six times the function's timeout, so that
# a batch being retried by the poller is not delivered again meanwhile.
VISIBILITY_TIMEOUT_FACTOR = 6
# The longest SQS keeps a message: time to read the DLQ and redrive after a bad deploy.
DLQ_RETENTION = Duration.days(14)


@dataclass(frozen=True)
class QueueProtection:
    """How every queue is encrypted (None: SSE-SQS) and whether dead-letter queues outlive the stack."""

    key: kms.IKey | None = None
    retain_dead_letters: bool = True

    def encryption(self) -> dict[str, object]:
        """The queue properties that encrypt it."""
        if self.key is None:
            return {"encryption": sqs.QueueEncryption.SQS_MANAGED}
        return {"encryption": sqs.QueueEncryption.KMS, "encryption_master_key": self.key}

    def dead_letter_queue(self, scope: Construct, construct_id: str, **props: object) -> sqs.Queue:
        """A dead-letter queue (or a destination of failures), encrypted, TLS only, kept 14 days, retained."""
        return sqs.Queue(
            scope,
            construct_id,
            enforce_ssl=True,
            retention_period=DLQ_RETENTION,
            removal_policy=RemovalPolicy.RETAIN if self.retain_dead_letters else RemovalPolicy.DESTROY,
            **self.encryption(),
            **props,  # type: ignore[arg-type]
        )


class WriteQueues(Construct):
    """The write queue (SSE, TLS only), redriven to its dead-letter queue after `max_receive_count` receives;
    `worker_timeout` sets the visibility timeout."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        worker_timeout: Duration,
        max_receive_count: int = DEFAULT_MAX_RECEIVE_COUNT,
        protection: QueueProtection | None = None,
    ) -> None:
        super().__init__(scope, construct_id)
        protection = protection or QueueProtection()
        self.max_receive_count = max_receive_count
        self.dead_letter_queue = protection.dead_letter_queue(self, "WriteDeadLetterQueue")
        self.queue = sqs.Queue(
            self,
            "WriteQueue",
            **protection.encryption(),  # type: ignore[arg-type]
            enforce_ssl=True,
            visibility_timeout=Duration.seconds(worker_timeout.to_seconds() * VISIBILITY_TIMEOUT_FACTOR),
            retention_period=Duration.days(4),
            dead_letter_queue=sqs.DeadLetterQueue(max_receive_count=max_receive_count, queue=self.dead_letter_queue),
        )
        # Index sync's on-failure destination: the metadata of stream batches that failed every retry (shard,
        # sequence numbers). Those memories are in DynamoDB but not in the index until `rearview reindex`.
        self.index_failures = protection.dead_letter_queue(self, "IndexSyncFailureQueue")


# How many receives a consolidation job gets before it goes to the DLQ; the worker reads the same number
# (`REARVIEW_AWS__CONSOLIDATION_MAX_RECEIVE_COUNT`) and moves the job itself on its last receive, with the reason.
DEFAULT_CONSOLIDATION_MAX_RECEIVE_COUNT = 5


class ConsolidationQueues(Construct):
    """The consolidation queue (FIFO: one message group per namespace, so a namespace's jobs run one at a time and
    in order; content deduplication off, the senders set the id that folds repeated triggers), redriven to its FIFO
    dead-letter queue after `max_receive_count` receives; `worker_timeout` sets the visibility timeout.

    High-throughput FIFO (deduplication and throughput per message group): namespaces are many, their groups
    independent, and a job's deduplication id already names its namespace."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        worker_timeout: Duration,
        max_receive_count: int = DEFAULT_CONSOLIDATION_MAX_RECEIVE_COUNT,
        protection: QueueProtection | None = None,
    ) -> None:
        super().__init__(scope, construct_id)
        protection = protection or QueueProtection()
        self.max_receive_count = max_receive_count
        self.dead_letter_queue = protection.dead_letter_queue(self, "ConsolidationDeadLetterQueue", fifo=True)
        self.queue = sqs.Queue(
            self,
            "ConsolidationQueue",
            fifo=True,
            content_based_deduplication=False,
            deduplication_scope=sqs.DeduplicationScope.MESSAGE_GROUP,
            fifo_throughput_limit=sqs.FifoThroughputLimit.PER_MESSAGE_GROUP_ID,
            **protection.encryption(),  # type: ignore[arg-type]
            enforce_ssl=True,
            visibility_timeout=Duration.seconds(worker_timeout.to_seconds() * VISIBILITY_TIMEOUT_FACTOR),
            retention_period=Duration.days(4),
            dead_letter_queue=sqs.DeadLetterQueue(max_receive_count=max_receive_count, queue=self.dead_letter_queue),
        )
