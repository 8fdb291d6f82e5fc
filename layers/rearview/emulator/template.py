"""The synthesised CloudFormation template, read as the emulator's one source of what to create: the table, the
queues, the functions (their code, timeout and environment), the event source mappings, the schedule and the HTTP
API's routes and authorizer. `make synth` (or `make emulate`, which synthesises to `build/emulate/`) writes it.

Only what the stack uses is read, and intrinsic functions are resolved against the emulated resources' physical ids
(`Resolver`); anything the emulator does not create (alarms, IAM, log groups, the dashboard) is left alone.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rearview.errors import ConfigurationError

REGION = "us-east-1"
ACCOUNT = "123456789012"
PSEUDO = {
    "AWS::Region": REGION,
    "AWS::AccountId": ACCOUNT,
    "AWS::Partition": "aws",
    "AWS::URLSuffix": "amazonaws.com",
    "AWS::NoValue": None,
}
_SUB_VARIABLE = re.compile(r"\$\{([^}!][^}]*)\}")


class TemplateError(ConfigurationError):
    """The template cannot be emulated: missing, unreadable, or naming what the emulator cannot resolve."""

    def __init__(self, message: str) -> None:
        super().__init__(message, field="template")


@dataclass(frozen=True)
class Resource:
    logical_id: str
    type: str
    properties: dict[str, Any]


@dataclass(frozen=True)
class FunctionSpec:
    """One Lambda function: its short name (`write_worker`), where its code is, and its configuration."""

    logical_id: str
    name: str
    code_dir: Path
    handler: str
    timeout_seconds: int
    memory_mb: int
    environment: dict[str, Any]
    # Started from a SnapStart snapshot of its published version.
    snap_start: bool = False


@dataclass(frozen=True)
class Route:
    method: str
    path: str
    function: str
    authorizer: str | None

    @property
    def key(self) -> str:
        return f"{self.method} {self.path}"


@dataclass(frozen=True)
class Authorizer:
    logical_id: str
    function: str
    ttl_seconds: int
    identity_source: tuple[str, ...]
    simple_responses: bool


@dataclass(frozen=True)
class EventSource:
    """An event source mapping: which resource feeds which function, and how."""

    logical_id: str
    function: str
    source: str
    properties: dict[str, Any]

    @property
    def batch_size(self) -> int:
        return int(self.properties.get("BatchSize", 10))

    @property
    def reports_item_failures(self) -> bool:
        return "ReportBatchItemFailures" in self.properties.get("FunctionResponseTypes", [])

    @property
    def filters(self) -> list[dict[str, Any]]:
        criteria = self.properties.get("FilterCriteria", {}).get("Filters", [])
        return [json.loads(f["Pattern"]) for f in criteria]


@dataclass(frozen=True)
class Schedule:
    logical_id: str
    expression: str
    enabled: bool
    targets: list[dict[str, Any]]


@dataclass
class Template:
    """A synthesised template and the assets beside it."""

    path: Path
    body: dict[str, Any]
    assets: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def load(cls, path: Path) -> Template:
        if not path.is_file():
            raise TemplateError(f"no template at {path}: `make emulate` (or `make synth`) synthesises it")
        body = json.loads(path.read_text())
        assets_path = path.with_name(path.name.replace(".template.json", ".assets.json"))
        assets = json.loads(assets_path.read_text()) if assets_path.is_file() else {}
        return cls(path, body, assets)

    @property
    def stack_name(self) -> str:
        return self.path.name.split(".")[0]

    def resources(self, *types: str) -> Iterator[Resource]:
        for logical_id, resource in self.body.get("Resources", {}).items():
            if not types or resource["Type"] in types:
                yield Resource(logical_id, resource["Type"], resource.get("Properties", {}))

    def resource(self, logical_id: str) -> Resource:
        found = self.body.get("Resources", {}).get(logical_id)
        if found is None:
            raise TemplateError(f"the template names {logical_id!r}, which it does not define")
        return Resource(logical_id, found["Type"], found.get("Properties", {}))

    def function_of(self, value: Any) -> str:
        """The logical id of the function a value refers to (directly, or through an alias or a version)."""
        for logical_id in referenced_ids(value):
            resource = self.resource(logical_id)
            if resource.type == "AWS::Lambda::Function":
                return logical_id
            if resource.type in ("AWS::Lambda::Alias", "AWS::Lambda::Version"):
                return self.function_of(resource.properties.get("FunctionName"))
        raise TemplateError(f"no function named in {json.dumps(value)[:200]}")

    # --- what the emulator creates ----------------------------------------------------------------------------

    def functions(self) -> dict[str, FunctionSpec]:
        """Every function, by logical id."""
        found = {}
        for resource in self.resources("AWS::Lambda::Function"):
            props = resource.properties
            code_dir, display = self._code_dir(resource.logical_id, props.get("Code", {}))
            found[resource.logical_id] = FunctionSpec(
                logical_id=resource.logical_id,
                name=_snake(display) if display else resource.logical_id,
                code_dir=code_dir,
                handler=str(props.get("Handler", "handler.handler")),
                timeout_seconds=int(props.get("Timeout", 3)),
                memory_mb=int(props.get("MemorySize", 128)),
                environment=dict(props.get("Environment", {}).get("Variables", {})),
                snap_start=props.get("SnapStart", {}).get("ApplyOn") == "PublishedVersions",
            )
        return found

    def _code_dir(self, logical_id: str, code: Mapping[str, Any]) -> tuple[Path, str]:
        """Where the function's code is: the asset directory its S3 key names, as the CDK CLI would upload it."""
        key = code.get("S3Key")
        if isinstance(key, str):
            asset = self.assets.get("files", {}).get(key.split(".")[0])
            if asset is not None:
                display = str(asset.get("displayName", "")).removesuffix("/Code").rsplit("/", 1)[-1]
                return self.path.parent / asset["source"]["path"], display
        raise TemplateError(f"function {logical_id}: its code is no asset of {self.path.name} (inline code?)")

    def routes(self) -> list[Route]:
        """The HTTP API's routes, each with the function its integration invokes and its authorizer."""
        routes = []
        for resource in self.resources("AWS::ApiGatewayV2::Route"):
            props = resource.properties
            method, path = str(props["RouteKey"]).split(" ", 1)
            (integration_id,) = referenced_ids(props["Target"])
            integration = self.resource(integration_id).properties
            authorizer = None
            if props.get("AuthorizationType", "NONE") != "NONE":
                (authorizer,) = referenced_ids(props["AuthorizerId"])
            routes.append(Route(method, path, self.function_of(integration["IntegrationUri"]), authorizer))
        return routes

    def authorizers(self) -> dict[str, Authorizer]:
        found = {}
        for resource in self.resources("AWS::ApiGatewayV2::Authorizer"):
            props = resource.properties
            found[resource.logical_id] = Authorizer(
                logical_id=resource.logical_id,
                function=self.function_of(props["AuthorizerUri"]),
                ttl_seconds=int(props.get("AuthorizerResultTtlInSeconds", 300)),
                identity_source=tuple(props.get("IdentitySource", [])),
                simple_responses=bool(props.get("EnableSimpleResponses", False)),
            )
        return found

    def event_sources(self) -> list[EventSource]:
        sources = []
        for resource in self.resources("AWS::Lambda::EventSourceMapping"):
            props = resource.properties
            if props.get("Enabled", True) is False:
                continue
            (source,) = referenced_ids(props["EventSourceArn"])
            sources.append(EventSource(resource.logical_id, self.function_of(props["FunctionName"]), source, props))
        return sources

    def schedules(self) -> list[Schedule]:
        found = []
        for resource in self.resources("AWS::Events::Rule"):
            props = resource.properties
            if "ScheduleExpression" in props:
                found.append(
                    Schedule(
                        resource.logical_id,
                        str(props["ScheduleExpression"]),
                        props.get("State", "ENABLED") == "ENABLED",
                        list(props.get("Targets", [])),
                    )
                )
        return found


def referenced_ids(value: Any) -> list[str]:
    """The logical ids a value refers to (Ref and Fn::GetAtt, at any depth), in order, pseudo parameters aside."""
    found: list[str] = []
    if isinstance(value, dict):
        for key, inner in value.items():
            if key == "Ref" and isinstance(inner, str) and inner not in PSEUDO:
                found.append(inner)
            elif key == "Fn::GetAtt":
                found.append(inner[0] if isinstance(inner, list) else str(inner).split(".")[0])
            else:
                found.extend(referenced_ids(inner))
    elif isinstance(value, list):
        for inner in value:
            found.extend(referenced_ids(inner))
    return list(dict.fromkeys(found))


def _snake(name: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()


# (logical id, attribute or "Ref") -> the emulated resource's value.
Lookup = Callable[[str, str], Any]


class Resolver:
    """Resolves Ref, Fn::GetAtt, Fn::Join, Fn::Sub, Fn::Select and Fn::Split against `lookup`."""

    def __init__(self, lookup: Lookup) -> None:
        self._lookup = lookup

    def resolve(self, value: Any) -> Any:
        if isinstance(value, list):
            return [self.resolve(v) for v in value]
        if not isinstance(value, dict):
            return value
        if len(value) == 1:
            ((key, inner),) = value.items()
            function = self._functions().get(key)
            if function is not None:
                return function(inner)
        return {k: self.resolve(v) for k, v in value.items()}

    def _functions(self) -> dict[str, Callable[[Any], Any]]:
        return {
            "Ref": self._ref,
            "Fn::GetAtt": self._get_att,
            "Fn::Join": self._join,
            "Fn::Sub": self._sub,
            "Fn::Select": lambda inner: self.resolve(inner[1])[int(self.resolve(inner[0]))],
            "Fn::Split": lambda inner: str(self.resolve(inner[1])).split(inner[0]),
        }

    def _ref(self, name: str) -> Any:
        return PSEUDO[name] if name in PSEUDO else self._lookup(name, "Ref")

    def _get_att(self, inner: Any) -> Any:
        logical_id, attribute = inner if isinstance(inner, list) else str(inner).split(".", 1)
        return self._lookup(logical_id, attribute)

    def _join(self, inner: Any) -> str:
        separator, parts = inner
        return str(separator).join(str(self.resolve(p)) for p in self.resolve(parts))

    def _sub(self, spec: Any) -> str:
        text, variables = (spec, {}) if isinstance(spec, str) else (spec[0], spec[1])

        def replace(match: re.Match[str]) -> str:
            name = match.group(1)
            if name in variables:
                return str(self.resolve(variables[name]))
            if name in PSEUDO:
                return str(PSEUDO[name])
            if "." in name:
                logical_id, attribute = name.split(".", 1)
                return str(self._lookup(logical_id, attribute))
            return str(self._lookup(name, "Ref"))

        return _SUB_VARIABLE.sub(replace, text)
