"""The search index, provisioned at deploy: a CloudFormation custom resource served by the `index_setup` function,
which runs the OpenSearch adapter's own `ensure_index` (rearview.api.index_setup). A new deployment's first recall
then finds the index, instead of waiting for the first write to reach index sync.

The resource's properties name what the index depends on: its name, the vector dimension and the layer's version.
A change of any of them (a new library version, whose mapping may have new fields) runs `ensure_index` again, which
adds the missing fields; an index of another dimension fails the deploy (rebuild it with `rearview reindex`). Delete
leaves the index in place."""

from __future__ import annotations

from aws_cdk import CustomResource
from aws_cdk import aws_lambda as lambda_
from constructs import Construct

RESOURCE_TYPE = "Custom::RearviewSearchIndex"


class SearchIndexProvisioning(Construct):
    """`ensure_index` at deploy, after the search backend (collection and data-access policy) and the function's
    grants exist."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        function: lambda_.Function,
        search: Construct,
        index_name: str,
        embedding_dim: int,
        layer: lambda_.ILayerVersion,
    ) -> None:
        super().__init__(scope, construct_id)
        self.resource = CustomResource(
            self,
            "Index",
            service_token=function.function_arn,
            resource_type=RESOURCE_TYPE,
            properties={
                "IndexName": index_name,
                "Dimension": str(embedding_dim),
                "LayerVersion": layer.layer_version_arn,
            },
        )
        self.resource.node.add_dependency(search)
        # The function's role and its policies, not only the function: the grants must be in place when it runs.
        self.resource.node.add_dependency(function)
