"""IAM in the emulation: every function calls AWS with the credentials of the role the template gives it, and moto
refuses what that role's policies do not allow, as AWS would.

`grant_roles` creates each function's role on moto with the policies the template attaches to it (resolved against
the emulated resources), assumes it, and makes an administrator for the emulator itself (its pollers, its snapshot,
an operator reading a dead-letter queue); `enforce` then turns moto's IAM checks on (`INITIAL_NO_AUTH_ACTION_COUNT`
reached). moto checks the action and, for SQS, the queue; what it leaves out for DynamoDB is checked here by
`DynamoDBAccess`: the table (or index) as the resource, and the `dynamodb:LeadingKeys` condition of every grant
(`ForAllValues:StringLike`), which is how each function is held to its partitions. Only an in-process moto can be
held to it (the emulator patches its DynamoDB handler); an external one (`REARVIEW_EMULATE_MOTO_URL`) checks nothing.

Not emulated: OpenSearch's own authorisation (the data-access policy; tests/infra checks it against the functions
that call the index), KMS key policies, Bedrock, and conditions other than LeadingKeys.
"""

from __future__ import annotations

import fnmatch
import json
import re
import threading
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlparse

from rearview.emulator.template import Resolver, Template, referenced_ids

_ADMIN_USER = "rearview-emulator"
_SESSION_SECONDS = 43_200
_LEADING_KEYS = "dynamodb:LeadingKeys"
_PARTITION_KEY_CONDITION = re.compile(r"^\s*#?([A-Za-z0-9_]+)\s*=\s*(:[A-Za-z0-9_]+)")


@dataclass(frozen=True)
class Credentials:
    access_key_id: str
    secret_access_key: str
    session_token: str | None = None

    def environment(self) -> dict[str, str]:
        env = {"AWS_ACCESS_KEY_ID": self.access_key_id, "AWS_SECRET_ACCESS_KEY": self.secret_access_key}
        if self.session_token:
            env["AWS_SESSION_TOKEN"] = self.session_token
        return env


@dataclass
class Principals:
    """The emulator's own credentials and each function's (by logical id), with the statements each role holds."""

    admin: Credentials
    functions: dict[str, Credentials] = field(default_factory=dict)
    statements: dict[str, list[dict[str, Any]]] = field(default_factory=dict)


def role_policies(template: Template, role_id: str) -> list[dict[str, Any]]:
    """The policy documents the template attaches to a role: its inline policies and the AWS::IAM::Policy resources
    naming it (unresolved)."""
    documents = [p["PolicyDocument"] for p in template.resource(role_id).properties.get("Policies", [])]
    for resource in template.resources("AWS::IAM::Policy"):
        if role_id in referenced_ids(resource.properties.get("Roles", [])):
            documents.append(resource.properties["PolicyDocument"])
    return documents


def grant_roles(template: Template, resolver: Resolver, iam: Any, sts: Any) -> Principals:
    """Each function's role, made on moto from the template and assumed; and the emulator's administrator. Run before
    `enforce` (moto checks nothing yet)."""
    iam.create_user(UserName=_ADMIN_USER)
    allow_all = {"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": "*", "Resource": "*"}]}
    iam.put_user_policy(UserName=_ADMIN_USER, PolicyName="emulator", PolicyDocument=json.dumps(allow_all))
    key = iam.create_access_key(UserName=_ADMIN_USER)["AccessKey"]
    principals = Principals(admin=Credentials(key["AccessKeyId"], key["SecretAccessKey"]))
    roles: dict[str, tuple[str, list[dict[str, Any]]]] = {}  # a role several functions share is made once
    for function_id, spec in template.functions().items():
        (role_id,) = referenced_ids(template.resource(function_id).properties["Role"])
        if role_id not in roles:
            roles[role_id] = _make_role(template, resolver, iam, role_id)
        arn, statements = roles[role_id]
        assumed = sts.assume_role(RoleArn=arn, RoleSessionName=spec.name, DurationSeconds=_SESSION_SECONDS)
        creds = assumed["Credentials"]
        principals.functions[function_id] = Credentials(
            creds["AccessKeyId"], creds["SecretAccessKey"], creds["SessionToken"]
        )
        principals.statements[creds["AccessKeyId"]] = statements
    return principals


def _make_role(template: Template, resolver: Resolver, iam: Any, role_id: str) -> tuple[str, list[dict[str, Any]]]:
    """A role of the template made on moto with its policies resolved: its ARN and the statements it holds."""
    role = template.resource(role_id).properties
    name = f"{template.stack_name}-{role_id}"[:64]
    trust = json.dumps(role.get("AssumeRolePolicyDocument", {}))
    arn = iam.create_role(RoleName=name, AssumeRolePolicyDocument=trust)["Role"]["Arn"]
    statements: list[dict[str, Any]] = []
    for n, document in enumerate(role_policies(template, role_id)):
        resolved = resolver.resolve(document)
        iam.put_role_policy(RoleName=name, PolicyName=f"policy{n}", PolicyDocument=json.dumps(resolved))
        statements.extend(_as_list(resolved.get("Statement", [])))
    return str(arn), statements


def enforce(principals: Principals) -> None:
    """Turn moto's IAM checks on for every request from now (in this process's moto), with the DynamoDB checks
    moto leaves out."""
    from moto import settings
    from moto.core.authorization import ActionAuthenticatorMixin

    DynamoDBAccess.install(principals)
    ActionAuthenticatorMixin.request_count = 0
    settings.INITIAL_NO_AUTH_ACTION_COUNT = 0


def release() -> None:
    """Undo `enforce` when the emulator stops: moto in this process checks nothing again (a test process, or a
    second emulator, must not inherit the first one's principals)."""
    import os

    from moto import settings

    DynamoDBAccess.install_none()
    settings.INITIAL_NO_AUTH_ACTION_COUNT = float(os.environ.get("INITIAL_NO_AUTH_ACTION_COUNT", float("inf")))


class DynamoDBAccess:
    """What moto's IAM check leaves out for DynamoDB: the table as the resource (moto checks `*`), and the partition
    keys a request reaches against the `dynamodb:LeadingKeys` condition of the role's grants."""

    _lock = threading.Lock()
    _principals: Principals | None = None

    @classmethod
    def install(cls, principals: Principals) -> None:
        from moto.dynamodb.responses import DynamoHandler

        with cls._lock:
            cls._principals = principals
            if getattr(DynamoHandler, "_rearview_checked", False):
                return
            original = DynamoHandler._authenticate_and_authorize_normal_action

            def checked(handler: Any, resource: str = "*") -> None:
                if _operation(handler) in _TRANSACTIONS and cls.enforcing():
                    cls.check_transaction(handler)
                    return
                original(handler, cls.resource_of(handler))
                cls.check_leading_keys(handler)

            # moto's handler, extended in this process (the emulator's moto): its own check, then the table's.
            setattr(DynamoHandler, "_authenticate_and_authorize_normal_action", checked)  # noqa: B010
            setattr(DynamoHandler, "_rearview_checked", True)  # noqa: B010

    @classmethod
    def install_none(cls) -> None:
        with cls._lock:
            cls._principals = None

    @staticmethod
    def resource_of(handler: Any) -> str:
        body = _body(handler)
        tables = _tables(body)
        table = tables[0] if tables else "*"
        arn = f"arn:aws:dynamodb:{handler.region}:{handler.current_account}:table/{table}"
        return arn + (f"/index/{body['IndexName']}" if body.get("IndexName") else "")

    @classmethod
    def enforcing(cls) -> bool:
        from moto import settings

        return cls._principals is not None and settings.INITIAL_NO_AUTH_ACTION_COUNT == 0

    @classmethod
    def statements_of(cls, handler: Any) -> tuple[str, list[dict[str, Any]] | None]:
        """The caller's access key and its role's statements (None: the emulator's administrator)."""
        assert cls._principals is not None
        credential = re.search(r"Credential=([^/]+)/", str(handler.headers.get("Authorization", "")))
        key = credential.group(1) if credential else "?"
        return key, cls._principals.statements.get(key)

    @classmethod
    def check_leading_keys(cls, handler: Any) -> None:
        if not cls.enforcing():
            return
        key, statements = cls.statements_of(handler)
        if statements is None:  # the emulator's administrator (moto has checked it)
            return
        action, body = "dynamodb:" + _operation(handler), _body(handler)
        if not allows_leading_keys(statements, action, cls.resource_of(handler), leading_keys(body)):
            _deny(key, action, leading_keys(body))

    @classmethod
    def check_transaction(cls, handler: Any) -> None:
        """A transaction is authorised item by item, each as its own action (PutItem, UpdateItem, DeleteItem,
        ConditionCheckItem; GetItem for a read), as DynamoDB does: there is no IAM action for the transaction."""
        from moto.iam.access_control import IAMRequest

        query = urlparse(handler.uri).query  # as moto's own check builds the signed path
        path = handler.raw_path + (f"?{query}" if query else "")
        IAMRequest(
            account_id=handler.current_account, method=handler.method, path=path, data=handler.data,
            body=handler.raw_body, headers=handler.headers, action=handler._get_action(),
        ).check_signature()  # fmt: skip
        key, statements = cls.statements_of(handler)
        if statements is None:
            return
        for item in _body(handler).get("TransactItems", []):
            for kind, operation in item.items():
                action = "dynamodb:" + _ITEM_ACTIONS.get(kind, kind)
                arn = f"arn:aws:dynamodb:{handler.region}:{handler.current_account}:table/{operation['TableName']}"
                keys = leading_keys(operation)
                if not allows_leading_keys(statements, action, arn, keys):
                    _deny(key, action, keys)


def allows_leading_keys(statements: Iterable[Mapping[str, Any]], action: str, resource: str, keys: set[str]) -> bool:
    """Whether an Allow statement grants `action` on `resource` for every one of `keys` (none: any grant does)."""
    for statement in statements:
        if statement.get("Effect") != "Allow":
            continue
        if not any(fnmatch.fnmatchcase(action, p) for p in _as_list(statement.get("Action", []))):
            continue
        if not any(fnmatch.fnmatchcase(resource, p) for p in _as_list(statement.get("Resource", []))):
            continue
        condition = statement.get("Condition", {}).get("ForAllValues:StringLike", {}).get(_LEADING_KEYS)
        if condition is None or all(any(fnmatch.fnmatchcase(k, p) for p in _as_list(condition)) for k in keys):
            return True
    return False


def leading_keys(body: Mapping[str, Any]) -> set[str]:
    """The partition key values a DynamoDB request reaches (of the table's `pk`, or of the index it queries)."""
    items = [body.get("Key"), body.get("Item")]
    for table in (body.get("RequestItems") or {}).values():
        for request in table.get("Keys", []) if isinstance(table, dict) else table:
            delete, put = request.get("DeleteRequest", {}), request.get("PutRequest", {})
            items.append(delete.get("Key") or put.get("Item") or request)  # BatchGetItem: the key itself
    for action in body.get("TransactItems", []):
        items.extend(operation.get("Key") or operation.get("Item") for operation in action.values())
    found = {_value(item["pk"]) for item in items if item and "pk" in item}
    match = _PARTITION_KEY_CONDITION.match(str(body.get("KeyConditionExpression") or ""))
    if match:
        found.add(_value(body.get("ExpressionAttributeValues", {}).get(match.group(2), {})))
    return found


_TRANSACTIONS = ("TransactWriteItems", "TransactGetItems")
_ITEM_ACTIONS = {
    "Put": "PutItem",
    "Update": "UpdateItem",
    "Delete": "DeleteItem",
    "ConditionCheck": "ConditionCheckItem",
    "Get": "GetItem",
}


def _operation(handler: Any) -> str:
    return str(handler.headers.get("X-Amz-Target", "")).rpartition(".")[2]


def _deny(key: str, action: str, keys: set[str]) -> None:
    from moto.core.exceptions import AccessDeniedError

    raise AccessDeniedError(user_arn=f"the role of access key {key}", action=f"{action} on partitions {sorted(keys)}")


def _value(typed: Mapping[str, Any]) -> str:
    return str(next(iter(typed.values()), ""))


def _tables(body: Mapping[str, Any]) -> list[str]:
    if body.get("TableName"):
        return [str(body["TableName"])]
    if body.get("RequestItems"):
        return list(body["RequestItems"])
    return [str(op["TableName"]) for action in body.get("TransactItems", []) for op in action.values()]


def _body(handler: Any) -> dict[str, Any]:
    raw = handler.body
    if isinstance(raw, dict):  # moto's DynamoDB handler parses the body before it authorises
        return raw
    try:
        parsed = json.loads(raw.decode() if isinstance(raw, bytes) else (raw or "{}"))
    except ValueError:
        return {}
    return parsed if isinstance(parsed, dict) else {}


def _as_list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [value]
