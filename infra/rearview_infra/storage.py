"""The single DynamoDB table: working memory, episodes, facts, namespace state and API keys.

Keys and indexes are those of the DynamoDB store adapter
(`rearview.adapters.dynamodb.table_definition`), repeated here so that synthesis needs none of the
library's dependencies; tests/infra checks that the two agree."""

from __future__ import annotations

from aws_cdk import RemovalPolicy
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_kms as kms
from constructs import Construct

PARTITION_KEY = "pk"
SORT_KEY = "sk"
# Epoch seconds: working memory, the ledger's and quota's items, and memories that expire (a grace after their
# `expires_at`: the retention sweep forgets them first, with its cascade). DynamoDB deletes expired items lazily
# (up to ~48 h), so readers filter on it too.
TTL_ATTRIBUTE = "ttl"

GSI_BY_TIME = "by_time"
GSI_BY_CREATED = "by_created"
GSI_UNCONSOLIDATED = "unconsolidated"
GSI_BY_NAMESPACE = "by_namespace"
GSI_EXPIRING = "expiring"


class MemoryTable(Construct):
    """The table, on-demand, with point-in-time recovery, a NEW_AND_OLD_IMAGES stream for index sync, and by
    default (`retain`) kept when the stack is deleted and protected against deletion: it is the source of truth,
    and the index can be rebuilt from it. Encrypted with `encryption_key` when given, else an AWS-managed key."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        table_name: str | None = None,
        retain: bool = True,
        encryption_key: kms.IKey | None = None,
    ) -> None:
        super().__init__(scope, construct_id)
        string = dynamodb.AttributeType.STRING
        self.table = dynamodb.Table(
            self,
            "Table",
            table_name=table_name,
            partition_key=dynamodb.Attribute(name=PARTITION_KEY, type=string),
            sort_key=dynamodb.Attribute(name=SORT_KEY, type=string),
            billing_mode=dynamodb.BillingMode.PAY_PER_REQUEST,
            time_to_live_attribute=TTL_ATTRIBUTE,
            stream=dynamodb.StreamViewType.NEW_AND_OLD_IMAGES,
            point_in_time_recovery_specification=dynamodb.PointInTimeRecoverySpecification(
                point_in_time_recovery_enabled=True
            ),
            encryption=(
                dynamodb.TableEncryption.CUSTOMER_MANAGED if encryption_key else dynamodb.TableEncryption.AWS_MANAGED
            ),
            encryption_key=encryption_key,
            deletion_protection=retain,
            removal_policy=RemovalPolicy.RETAIN if retain else RemovalPolicy.DESTROY,
        )
        # Every index is KEYS_ONLY: the store reads the items back from the table with a consistent
        # BatchGetItem, so a lagging index entry is never returned as data and a new model field needs no
        # index rebuild. Lookup by id needs no index (an id lives at `EP#<id>` or `FACT#<id>`).
        indexes = (
            # A namespace's layer by time range: `NS#<namespace>#<layer>`, `<time ISO>#<id>`.
            (GSI_BY_TIME, "gsi_time_pk", "gsi_time_sk"),
            # A namespace's newest episodes (read-your-writes while the search index catches up).
            (GSI_BY_CREATED, "gsi_created_pk", "gsi_created_sk"),
            # Sparse: only unconsolidated episodes carry `uc_pk` (`UC#<shard>`), so the scheduled
            # consolidation finds the namespaces with work to do without scanning.
            (GSI_UNCONSOLIDATED, "uc_pk", "uc_sk"),
            # Sparse: only a namespace's STATE item carries `ns_pk` (`NAMESPACES`) and `ns_sk` (its name), so
            # the namespace listing and a subtree's erase find namespaces by prefix without scanning.
            (GSI_BY_NAMESPACE, "ns_pk", "ns_sk"),
            # Sparse: only memories that expire carry `exp_pk` (`EXP#<shard>`) and `exp_sk` (`<expires ISO>#<id>`),
            # so the retention sweep finds the expired ones, soonest first, without scanning.
            (GSI_EXPIRING, "exp_pk", "exp_sk"),
        )
        for name, partition, sort in indexes:
            self.table.add_global_secondary_index(
                index_name=name,
                partition_key=dynamodb.Attribute(name=partition, type=string),
                sort_key=dynamodb.Attribute(name=sort, type=string),
                projection_type=dynamodb.ProjectionType.KEYS_ONLY,
            )
