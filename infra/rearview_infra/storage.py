"""The single DynamoDB table: working memory, episodes, facts, namespace state and API keys.

Keys and index attributes are the DynamoDB store adapter's (`rearview.adapters.dynamodb_store`); they are
spelled out here because the table must exist before any code runs."""

from __future__ import annotations

from aws_cdk import RemovalPolicy
from aws_cdk import aws_dynamodb as dynamodb
from constructs import Construct

PARTITION_KEY = "pk"
SORT_KEY = "sk"
# Epoch seconds; only working-memory items carry it. DynamoDB deletes expired items lazily (up to ~48 h), so
# readers filter on it too.
TTL_ATTRIBUTE = "ttl"

GSI_BY_ID = "by_id"
GSI_BY_TIME = "by_time"
GSI_UNCONSOLIDATED = "unconsolidated"


class MemoryTable(Construct):
    """The table, on-demand, with point-in-time recovery, a NEW_AND_OLD_IMAGES stream for index sync, and kept
    (RETAIN) when the stack is deleted: it is the source of truth, and the index can be rebuilt from it."""

    def __init__(self, scope: Construct, construct_id: str, *, table_name: str | None = None) -> None:
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
            encryption=dynamodb.TableEncryption.AWS_MANAGED,
            removal_policy=RemovalPolicy.RETAIN,
        )
        # Lookup by id (`ID#<namespace>#<id>`): keys only, the item is then read from the base table.
        self.table.add_global_secondary_index(
            index_name=GSI_BY_ID,
            partition_key=dynamodb.Attribute(name="gsi_id", type=string),
            projection_type=dynamodb.ProjectionType.KEYS_ONLY,
        )
        # Listing a namespace's layer by time range (`NS#<namespace>#<layer>`, `<occurred ISO>#<id>`);
        # projects everything because such listings read whole memories (forget by filter, consolidation,
        # reindex).
        self.table.add_global_secondary_index(
            index_name=GSI_BY_TIME,
            partition_key=dynamodb.Attribute(name="gsi_time_pk", type=string),
            sort_key=dynamodb.Attribute(name="gsi_time_sk", type=string),
            projection_type=dynamodb.ProjectionType.ALL,
        )
        # Sparse: only unconsolidated episodes carry `uc_pk`, so the scheduled consolidation finds the
        # namespaces with work to do without scanning. The namespace is in `uc_sk`, so keys suffice.
        self.table.add_global_secondary_index(
            index_name=GSI_UNCONSOLIDATED,
            partition_key=dynamodb.Attribute(name="uc_pk", type=string),
            sort_key=dynamodb.Attribute(name="uc_sk", type=string),
            projection_type=dynamodb.ProjectionType.KEYS_ONLY,
        )
