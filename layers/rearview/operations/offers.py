"""How an operation is offered (over HTTP, as an MCP tool, as a command, as a client method), and the operation
itself: the plain data a catalogue row holds.

This module, and the catalogue's rows, import only the standard library and `rearview.domain.permissions`: the CDK
app builds API Gateway's routes from them without the library's dependencies. The rows' parameter and return types
are read by the edges (`rearview.operations.signature`), which have the dependencies.

Paths are written once, as URI templates (`/v1/namespaces/{ns}/recall`, the syntax of API Gateway and OpenAPI);
`Route.powertools_path` renders them the way Powertools registers them (`<ns>`).
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Literal, TypeVar
from urllib.parse import quote

from rearview.domain.permissions import Permission

# The Lambda functions that serve HTTP on AWS (infra/rearview_infra/functions.py deploys them).
FunctionName = Literal["write", "recall", "forget", "erase", "consolidate", "mcp"]
HttpMethod = Literal["GET", "PUT", "POST", "PATCH", "DELETE"]
Function = TypeVar("Function", bound=Callable[..., Any])

_PARAMETER = re.compile(r"\{(\w+)\}")
# The path segment of the namespace an operation acts in; its function takes it as `namespace`.
NAMESPACE_SEGMENT = "ns"
# The short names paths give some parameters (`/memories/{id}`), by the name the operation's function gives them.
PATH_NAMES: Mapping[str, str] = {"memory_id": "id", "session_id": "sid"}


@dataclass(frozen=True)
class Route:
    """One HTTP route. `permission` None: the route checks none itself (public, or the MCP endpoint, whose tools each
    check their own)."""

    method: HttpMethod
    path: str
    operation: str
    permission: Permission | None
    function: FunctionName
    summary: str = ""
    tag: str = ""
    # Success codes worth documenting beyond a plain 200 (the API's error codes are documented for every route).
    success: tuple[tuple[int, str], ...] = ((200, "OK"),)
    documented: bool = True
    # API Gateway's key authorizer runs before the function. Off only where the function must answer an
    # unauthenticated caller itself: the health check. (`POST /mcp` has it too: an unauthenticated flood must not
    # start the MCP function; the price is that the gateway's 401/403 carry no `WWW-Authenticate` challenge, see
    # infra/README.md, "The MCP route and its 401".)
    gateway_authorizer: bool = True

    @property
    def powertools_path(self) -> str:
        """The path as Powertools registers it: `/v1/namespaces/<ns>/recall`."""
        return _PARAMETER.sub(r"<\1>", self.path)

    @property
    def gateway_path(self) -> str:
        """The path as API Gateway routes it: `/v1/namespaces/{ns}/recall`. An HTTP API route cannot end with `/`;
        a request to `/v1/memories/` reaches the route `/v1/memories`, its raw path kept (the mem0 paths end so)."""
        return self.path.rstrip("/") or "/"

    @property
    def route_key(self) -> str:
        """API Gateway's route key, `POST /v1/namespaces/{ns}/recall`."""
        return f"{self.method} {self.gateway_path}"

    @property
    def parameters(self) -> tuple[str, ...]:
        """The names of the path's parameters, in order (`ns`, `id` ...)."""
        return tuple(_PARAMETER.findall(self.path))

    def url_path(self, **parameters: str) -> str:
        """The path with its parameters filled in, each percent-encoded (a namespace keeps its `:` and `@`)."""
        return _PARAMETER.sub(lambda m: quote(parameters[m.group(1)], safe=":@"), self.path)

    def match(self, path: str) -> dict[str, str] | None:
        """The raw (still percent-encoded) path parameters if `path` is this route's, else None."""
        found = self._pattern.fullmatch(path)
        return found.groupdict() if found else None

    @cached_property
    def _pattern(self) -> re.Pattern[str]:
        return re.compile("^" + _PARAMETER.sub(r"(?P<\1>[^/]+)", self.path) + "$")


@dataclass(frozen=True)
class Http:
    """How HTTP offers an operation: method, path, the Lambda function that serves it on AWS, its OpenAPI tag;
    the summary defaults to the first line of the operation's description."""

    method: HttpMethod
    path: str
    function: FunctionName
    tag: str
    summary: str = ""
    success: tuple[tuple[int, str], ...] = ((200, "OK"),)
    gateway_authorizer: bool = True


# An MCP tool's hints to the client (the SDK's ToolAnnotations): one that only reads, and one that changes memory.
READS: Mapping[str, bool] = {"read_only_hint": True, "open_world_hint": False}


def changes(*, destructive: bool, idempotent: bool) -> Mapping[str, bool]:
    """The hints of a tool that changes memory."""
    return {"read_only_hint": False, "destructive_hint": destructive, "idempotent_hint": idempotent}


@dataclass(frozen=True)
class Tool:
    """How MCP offers an operation: the tool's name (default: the operation's), title and hints; its description
    is the operation's unless given (a tool's is written for a model). `forced` fixes fields of the request model,
    which the tool then does not take; `text` makes it answer compact text unless asked for JSON."""

    title: str
    hints: Mapping[str, bool]
    name: str = ""
    description: str = ""
    forced: Mapping[str, Any] = field(default_factory=dict)
    # The tool answers compact text by default (what a model reads, `rearview.api.mcp_text`), and takes `format`:
    # "json" for the full model.
    text: bool = False


@dataclass(frozen=True)
class Command:
    """How the command line offers an operation: `rearview [group] <name> NAMESPACE <path parameters> [--options]`,
    one option per field of its request model and per other parameter (a command of its own where the CLI has one,
    else one made from the row, printing the answer as JSON)."""

    name: str
    group: str | None = None


@dataclass(frozen=True)
class Operation:
    """One operation: its name (the OpenAPI operationId), the permission it needs, the service call (`function`,
    whose parameters and return type say what it takes and answers), and how each edge offers it."""

    name: str
    permission: Permission | None
    function: Callable[..., Any] = field(repr=False)
    route: Route
    tools: tuple[Tool, ...] = ()
    command: Command | None = None
    # The Python client's method; None where the client has none.
    client: str | None = None

    @property
    def description(self) -> str:
        """What the operation does: its function's docstring, without indentation."""
        return inspect.cleandoc(self.function.__doc__ or "")

    @property
    def namespaced(self) -> bool:
        return NAMESPACE_SEGMENT in self.route.parameters


class Catalogue:
    """The operations, each declared once by `operation(...)` on its service call."""

    def __init__(self) -> None:
        self._operations: dict[str, Operation] = {}

    def operation(
        self,
        permission: Permission | None,
        http: Http,
        *,
        tools: tuple[Tool, ...] = (),
        command: Command | None = None,
        client: str | None = None,
    ) -> Callable[[Function], Function]:
        """Declare the decorated function (`def recall(s: Services, namespace: str, query: RecallQuery) ->
        RecallResponse`) as the operation of its name."""

        def declare(function: Function) -> Function:
            name = function.__name__
            if name in self._operations:
                raise ValueError(f"operation {name!r} is declared twice")
            summary = http.summary or inspect.cleandoc(function.__doc__ or "").split("\n\n")[0].replace("\n", " ")
            route = Route(
                http.method,
                http.path,
                name,
                permission,
                http.function,
                summary,
                http.tag,
                http.success,
                gateway_authorizer=http.gateway_authorizer,
            )
            self._operations[name] = Operation(name, permission, function, route, tools, command, client)
            return function

        return declare

    def include(self, other: Catalogue) -> None:
        """Add the operations another catalogue declares (a compatibility API kept in a module of its own)."""
        for operation in other:
            if operation.name in self._operations:
                raise ValueError(f"operation {operation.name!r} is declared twice")
            self._operations[operation.name] = operation

    def __iter__(self) -> Iterator[Operation]:
        return iter(self._operations.values())

    def named(self, name: str) -> Operation:
        """The operation of this name; KeyError if there is none."""
        return self._operations[name]
