"""The search index's home: an OpenSearch Serverless VECTORSEARCH collection (default), with the context flag
`rearview:search=domain` a single-node managed OpenSearch domain, or with `rearview:search=table` no cluster at all
(`TableSearch`: each search reads the namespace's newest memories from the table and ranks them in the function).

Both expose the same small surface to the stack: `endpoint`, `service` (the SigV4 service name the adapter
signs for: `aoss` or `es`), `grant_read(grantee)` for functions that search, `grant_write(grantee)` for the
one that maintains the index (index sync), `grant_delete_documents(grantee)` for the one that erases namespaces and
`grant_create_index(grantee)` for the one that provisions it at deploy (index_setup).

Both are kept when the stack is deleted unless `retain` is off (the memories' index is rebuilt from the table by
`rearview reindex`, but rebuilding takes a while), and both encrypt with the deployment's customer-managed key when
there is one."""

from __future__ import annotations

from typing import Any, Literal, Protocol

import jsii
from aws_cdk import IStableAnyProducer, Lazy, RemovalPolicy, Stack
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_opensearchserverless as aoss
from aws_cdk import aws_opensearchservice as opensearch
from constructs import Construct

SearchMode = Literal["serverless", "domain", "table"]

# Data-access permissions inside the collection (OpenSearch Serverless authorises twice: the IAM action
# aoss:APIAccessAll on the collection, then this policy on indexes).
_READ_PERMISSIONS = ("aoss:DescribeIndex", "aoss:ReadDocument")
_WRITE_PERMISSIONS = (*_READ_PERMISSIONS, "aoss:CreateIndex", "aoss:UpdateIndex", "aoss:WriteDocument")
# The erase: find a namespace's documents and delete them (delete by query), nothing of the index itself.
_DELETE_PERMISSIONS = (*_READ_PERMISSIONS, "aoss:WriteDocument")
# The deploy-time custom resource: create the index, or add the fields a newer mapping has (no documents).
_CREATE_PERMISSIONS = ("aoss:DescribeIndex", "aoss:CreateIndex", "aoss:UpdateIndex")
# People running `rearview reindex` may also drop the index to rebuild it.
_ADMIN_PERMISSIONS = (*_WRITE_PERMISSIONS, "aoss:DeleteIndex")


class SearchBackend(Protocol):
    """What the stack needs from either flavour of OpenSearch."""

    @property
    def endpoint(self) -> str: ...
    @property
    def service(self) -> Literal["aoss", "es"]: ...
    def grant_read(self, grantee: iam.IGrantable) -> None: ...
    def grant_write(self, grantee: iam.IGrantable) -> None: ...
    def grant_delete_documents(self, grantee: iam.IGrantable) -> None: ...
    def grant_create_index(self, grantee: iam.IGrantable) -> None: ...


class ServerlessVectorCollection(Construct):
    """A VECTORSEARCH collection with its encryption, network and data-access policies.

    The network policy allows the public endpoint: every request is still SigV4-signed and checked against IAM
    and the data-access policy. A VPC endpoint would put every function in a VPC (NAT or endpoints for
    DynamoDB, SQS and Bedrock) for no gain in authorisation.

    The data-access policy is written when the stack is synthesised, from the principals granted by then
    (`grant_read`/`grant_write`, plus `admin_principal_arns` for people running `rearview reindex`)."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        collection_name: str,
        index_name: str,
        standby_replicas: bool = True,
        admin_principal_arns: tuple[str, ...] = (),
        retain: bool = True,
        encryption_key: kms.IKey | None = None,
    ) -> None:
        super().__init__(scope, construct_id)
        if not 3 <= len(collection_name) <= 28 or not collection_name.replace("-", "").isalnum():
            # 28, not 32: the policy names append a 4-character suffix and share the 32-character limit.
            raise ValueError(f"collection name {collection_name!r}: 3 to 28 characters of a-z, 0-9 and -")
        self._name = collection_name.lower()
        self._index_name = index_name
        self._readers: list[iam.IPrincipal] = []
        self._writers: list[iam.IPrincipal] = []
        self._deleters: list[iam.IPrincipal] = []
        self._creators: list[iam.IPrincipal] = []
        self._admins: tuple[str, ...] = admin_principal_arns
        stack = Stack.of(self)
        collection_resource = [f"collection/{self._name}"]

        encryption = aoss.CfnSecurityPolicy(
            self,
            "EncryptionPolicy",
            name=f"{self._name}-enc",
            type="encryption",
            policy=stack.to_json_string(
                {
                    "Rules": [{"ResourceType": "collection", "Resource": collection_resource}],
                    **(
                        {"AWSOwnedKey": False, "KmsARN": encryption_key.key_arn}
                        if encryption_key is not None
                        else {"AWSOwnedKey": True}
                    ),
                }
            ),
        )
        network = aoss.CfnSecurityPolicy(
            self,
            "NetworkPolicy",
            name=f"{self._name}-net",
            type="network",
            policy=stack.to_json_string(
                [
                    {
                        "Rules": [{"ResourceType": "collection", "Resource": collection_resource}],
                        "AllowFromPublic": True,
                    }
                ]
            ),
        )
        self.collection = aoss.CfnCollection(
            self,
            "Collection",
            name=self._name,
            type="VECTORSEARCH",
            standby_replicas="ENABLED" if standby_replicas else "DISABLED",
            description="Rearview memories: BM25 text and k-NN vectors",
        )
        # A collection cannot be created before an encryption policy covers its name.
        self.collection.add_resource_dependency(encryption)
        self.collection.add_resource_dependency(network)
        # Kept with the stack's data by default, with the encryption policy it cannot be read without (a later stack
        # of the same collection name then finds both, and must be given another name or adopt them).
        removal = RemovalPolicy.RETAIN if retain else RemovalPolicy.DESTROY
        self.collection.apply_removal_policy(removal)
        encryption.apply_removal_policy(removal)

        self.access_policy = aoss.CfnAccessPolicy(
            self,
            "DataAccessPolicy",
            name=f"{self._name}-acc",
            type="data",
            policy=stack.to_json_string(Lazy.any(_AccessRulesProducer(self))),
        )
        self.access_policy.add_resource_dependency(self.collection)

    @property
    def endpoint(self) -> str:
        return self.collection.attr_collection_endpoint

    @property
    def service(self) -> Literal["aoss", "es"]:
        return "aoss"

    def grant_read(self, grantee: iam.IGrantable) -> None:
        """Search: IAM access to the API, and read rights on the index in the data-access policy."""
        self._grant_api(grantee)
        self._readers.append(grantee.grant_principal)

    def grant_write(self, grantee: iam.IGrantable) -> None:
        """Maintain the index: create it, upsert and delete documents."""
        self._grant_api(grantee)
        self._writers.append(grantee.grant_principal)

    def grant_delete_documents(self, grantee: iam.IGrantable) -> None:
        """Erase namespaces: find and delete their documents."""
        self._grant_api(grantee)
        self._deleters.append(grantee.grant_principal)

    def grant_create_index(self, grantee: iam.IGrantable) -> None:
        """Provision the index at deploy: create it, or update its mapping."""
        self._grant_api(grantee)
        self._creators.append(grantee.grant_principal)

    def _grant_api(self, grantee: iam.IGrantable) -> None:
        iam.Grant.add_to_principal(
            grantee=grantee, actions=["aoss:APIAccessAll"], resource_arns=[self.collection.attr_arn]
        )

    def data_access_rules(self) -> list[dict[str, Any]]:
        """The data-access policy document: one statement per access level that has principals."""
        index_resource = [f"index/{self._name}/{self._index_name}*"]
        levels = (
            ("index sync: maintain the index", self._writers, _WRITE_PERMISSIONS),
            ("erase: delete a namespace's documents", self._deleters, _DELETE_PERMISSIONS),
            ("index setup: create the index at deploy", self._creators, _CREATE_PERMISSIONS),
            ("functions that search", self._readers, _READ_PERMISSIONS),
            ("administrators: reindex and rebuild", self._admins, _ADMIN_PERMISSIONS),
        )
        statements: list[dict[str, Any]] = []
        for description, principals, permissions in levels:
            if not principals:
                continue
            statements.append(
                {
                    "Description": description,
                    "Rules": [
                        {
                            "ResourceType": "index",
                            "Resource": index_resource,
                            "Permission": list(permissions),
                        },
                        {
                            "ResourceType": "collection",
                            "Resource": [f"collection/{self._name}"],
                            "Permission": ["aoss:DescribeCollectionItems"],
                        },
                    ],
                    "Principal": [p if isinstance(p, str) else _principal_arn(p) for p in principals],
                }
            )
        return statements


@jsii.implements(IStableAnyProducer)
class _AccessRulesProducer:
    """Produces the collection's data-access rules at synthesis, after every grant has been made."""

    def __init__(self, collection: ServerlessVectorCollection) -> None:
        self._collection = collection

    def produce(self) -> list[dict[str, Any]]:
        return self._collection.data_access_rules()


def _principal_arn(principal: iam.IPrincipal) -> str:
    if isinstance(principal, iam.Role):
        return principal.role_arn
    arn = getattr(principal, "role_arn", None) or getattr(principal, "arn", None)
    if arn is None:
        raise TypeError(f"cannot name {principal} in an OpenSearch Serverless data-access policy")
    return str(arn)


class TableSearch:
    """No search cluster: the functions search the table itself (`aws.search` `store`: the namespace's newest
    `aws.search_fallback_scan` episodes and its active facts, read and ranked per search, as the fallback does while
    an index is down). Nothing to create or grant beyond the table; for small namespaces (up to that many episodes
    each, all of them searched) and deployments that must idle near zero (infra/README.md, "Cost")."""

    @property
    def endpoint(self) -> str:
        return ""

    @property
    def service(self) -> Literal["aoss", "es"]:
        return "es"

    def grant_read(self, grantee: iam.IGrantable) -> None:
        """Nothing: the table grants are the functions' own."""

    def grant_write(self, grantee: iam.IGrantable) -> None:
        """Nothing: there is no index to keep in step."""

    def grant_delete_documents(self, grantee: iam.IGrantable) -> None:
        """Nothing: erasing the table's items is the whole erase."""

    def grant_create_index(self, grantee: iam.IGrantable) -> None:
        """Nothing: there is no index to create."""


class ManagedSearchDomain(Construct):
    """A small managed OpenSearch domain (k-NN is built into OpenSearch 2.x), encrypted at rest and in
    transit, HTTPS only, authorised by IAM identity policies (no resource policy, no fine-grained access)."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        index_name: str,
        retain: bool = True,
        encryption_key: kms.IKey | None = None,
    ) -> None:
        super().__init__(scope, construct_id)
        self._index_name = index_name
        self.domain = opensearch.Domain(
            self,
            "Domain",
            version=opensearch.EngineVersion.OPENSEARCH_2_19,
            capacity=opensearch.CapacityConfig(
                data_nodes=1, data_node_instance_type="t3.small.search", multi_az_with_standby_enabled=False
            ),
            ebs=opensearch.EbsOptions(volume_size=20),
            encryption_at_rest=opensearch.EncryptionAtRestOptions(enabled=True, kms_key=encryption_key),
            node_to_node_encryption=True,
            enforce_https=True,
            removal_policy=RemovalPolicy.RETAIN if retain else RemovalPolicy.DESTROY,
        )

    @property
    def endpoint(self) -> str:
        return "https://" + self.domain.domain_endpoint

    @property
    def service(self) -> Literal["aoss", "es"]:
        return "es"

    def grant_read(self, grantee: iam.IGrantable) -> None:
        """Search the index (`_search`/`_msearch` are POSTs, hence read-write on the index path)."""
        self.domain.grant_index_read_write(self._index_name, grantee)

    def grant_write(self, grantee: iam.IGrantable) -> None:
        """Create the index, upsert and delete documents."""
        self.domain.grant_index_read_write(self._index_name, grantee)

    def grant_delete_documents(self, grantee: iam.IGrantable) -> None:
        """Delete a namespace's documents (`_delete_by_query`, a POST on the index path)."""
        self.domain.grant_index_read_write(self._index_name, grantee)

    def grant_create_index(self, grantee: iam.IGrantable) -> None:
        """Create the index at deploy (HEAD, PUT and the mapping's GET and PUT on the index path)."""
        self.domain.grant_index_read_write(self._index_name, grantee)
