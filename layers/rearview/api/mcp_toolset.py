"""MCP tools declared once each, with the permission they need and the request model they take.

`ToolSet.tool(permission, title=..., annotations=...)` declares a tool from a plain function,
`def recall(call: ToolCall, query: RecallQuery) -> RecallResponse`. The function is never shown to the SDK as is:
MCP clients and the models behind them want flat arguments, so the tool the SDK registers has one top-level
argument per field of the request model (its JSON schema, description and constraints copied from the model, the
same ones HTTP's OpenAPI shows), plus the function's other parameters and the optional `namespace`. A call then
checks the caller's namespace and permission, builds the request model from the arguments (so a bad argument reads
`field: reason`, as in HTTP's 422), and runs the function with the services.
"""

from __future__ import annotations

import contextlib
import inspect
import typing
from collections.abc import Callable, Collection, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Annotated, Any, Literal, TypeVar

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import CallToolResult, TextContent, ToolAnnotations
from pydantic import BaseModel, Field, PlainValidator, ValidationError, WithJsonSchema

from rearview.api import field_errors
from rearview.api.mcp_text import RENDERERS
from rearview.bootstrap import Services
from rearview.domain.access import ALL_NAMESPACES, Principal
from rearview.domain.json_input import check_json_value
from rearview.domain.namespaces import Namespace, validate_namespace
from rearview.domain.permissions import Permission
from rearview.errors import RearviewError
from rearview.operations.offers import Operation, Tool
from rearview.operations.signature import CALLER_PARAMETER, signature
from rearview.service.redaction import check_verbatim

ToolFunction = TypeVar("ToolFunction", bound=Callable[..., Any])

# A principal provider answers "who is calling?" for one tool call. It receives the HTTP request's ASGI scope,
# or None when the transport has no request (stdio, in-process clients).
PrincipalProvider = Callable[[Mapping[str, Any] | None], Principal]

NAMESPACE_ARGUMENT = "namespace"
_KEYWORD = inspect.Parameter.KEYWORD_ONLY
NamespaceArg = Annotated[
    str | None,
    Field(
        description="Optional. Omit it to use your own namespace. To act in a narrower one, give its full name; it "
        "must be your namespace or lie under it (e.g. 'acme:u-42' under 'acme'). 1 to 4 ':'-separated segments of "
        "letters, digits and _ . @ -",
        max_length=300,
    ),
]


FORMAT_ARGUMENT = "format"
FormatArg = Annotated[
    Literal["text", "json"],
    Field(
        description="'text' (the default): one compact line per memory, what you need to use it; 'json': the full "
        "answer with every field"
    ),
]


def answer_format(response: type[BaseModel]) -> Callable[[BaseModel, str], CallToolResult]:
    """How a tool that answers text (`Tool.text`) answers: its compact text (`mcp_text`), or with `format` 'json' the
    model as JSON, in a text block and as structured content."""
    render = RENDERERS[response]

    def answered(answer: BaseModel, wanted: str) -> CallToolResult:
        if wanted == "json":
            return CallToolResult(
                content=[TextContent(type="text", text=answer.model_dump_json())],
                structured_content=answer.model_dump(mode="json"),
            )
        return CallToolResult(content=[TextContent(type="text", text=render(answer))])

    return answered


@dataclass(frozen=True)
class McpState:
    """What the server's lifespan yields: the services and the way to learn who calls."""

    services: Services
    principal_provider: PrincipalProvider

    def default_namespace(self, principal: Principal) -> str:
        """The namespace a call acts in when it names none: the key's scope, else the configured default."""
        if principal.scope == ALL_NAMESPACES:
            return self.services.settings.default_namespace
        return principal.scope

    def authorized_namespace(self, ctx: Context, requested: str | None, permission: Permission) -> str:
        """The namespace of this call, checked against the caller's scope and permissions."""
        return self.authorized_call(ctx, requested, permission)[0]

    def authorized_call(
        self, ctx: Context, requested: str | None, permission: Permission
    ) -> tuple[Namespace, Principal]:
        """The namespace of this call, checked against the caller's scope and permissions, and the caller."""
        request = ctx.request_context.request
        principal = self.principal_provider(getattr(request, "scope", None))
        # The one check of the call's namespace: what the tool runs is handed the Namespace. One the caller names is
        # stored as given, so it may hold no secret.
        if requested is not None:
            namespace = check_verbatim(validate_namespace(requested), "namespace")
        else:
            namespace = validate_namespace(self.default_namespace(principal))
        self.services.access.authorize(principal, namespace, permission)
        return namespace, principal


@dataclass(frozen=True)
class ToolCall:
    """What a tool function gets besides its arguments: the services, the namespace the call may act in (checked
    once, here), and who calls."""

    services: Services
    namespace: Namespace
    caller: Principal


@contextlib.contextmanager
def tool_errors() -> Iterator[None]:
    """Turn what the caller can fix into a tool error naming the field; anything else stays a crash (logged,
    never shown)."""
    try:
        yield
    except RearviewError as exc:
        raise ToolError(exc.message) from exc
    except ValidationError as exc:
        message, _ = field_errors.describe(exc.errors(), nameless="arguments")
        raise ToolError(message or "arguments: invalid") from exc


def lifespan_state(ctx: Context) -> McpState:
    """The services and principal provider of the server this call reached (its lifespan's state)."""
    state = ctx.request_context.lifespan_context
    if not isinstance(state, McpState):
        raise RuntimeError("the MCP server was started without its lifespan")
    return state


@dataclass(frozen=True)
class ToolSpec:
    """One declared tool: the function, what it needs, and the flat signature the SDK sees."""

    name: str
    description: str
    function: Callable[..., Any]
    permission: Permission
    title: str
    annotations: ToolAnnotations
    forced: Mapping[str, Any]
    # The parameter that takes the request model, and the model; None for a tool without one.
    request: tuple[str, type[BaseModel]] | None
    # The function's other parameters, passed through as the SDK validated them.
    passed: tuple[str, ...]
    signature: inspect.Signature = field(repr=False)

    def call(self, ctx: Context, arguments: dict[str, Any]) -> Any:
        """Run one call: authorize the namespace, build the request model, run the function."""
        with tool_errors():
            state = lifespan_state(ctx)
            requested = arguments.pop(NAMESPACE_ARGUMENT, None)
            namespace, principal = state.authorized_call(ctx, requested, self.permission)
            kwargs = {name: arguments.pop(name) for name in self.passed}
            if self.request is not None:
                parameter, model = self.request
                kwargs[parameter] = model.model_validate(_given(model, arguments) | dict(self.forced))
            return self.function(ToolCall(state.services, namespace, principal), **kwargs)

    def sdk_function(self) -> Callable[..., Any]:
        """The function the SDK registers: `ctx` plus the flat arguments, which `call` receives."""

        def call_tool(ctx: Context, **arguments: Any) -> Any:
            return self.call(ctx, arguments)

        call_tool.__name__ = self.name
        call_tool.__doc__ = self.description
        call_tool.__signature__ = self.signature  # type: ignore[attr-defined]
        # The SDK finds the Context parameter and the output type through the annotations.
        call_tool.__annotations__ = {
            **{p.name: p.annotation for p in self.signature.parameters.values()},
            "return": self.signature.return_annotation,
        }
        return call_tool


def _given(model: type[BaseModel], arguments: Mapping[str, Any]) -> dict[str, Any]:
    """The arguments to build the model from. An optional argument sent as null takes the model's default: models
    often send null for what they mean to leave out."""
    return {
        name: value for name, value in arguments.items() if value is not None or model.model_fields[name].is_required()
    }


class ToolSet:
    """The tools of one MCP server, each declared once with its permission."""

    def __init__(self) -> None:
        self._specs: dict[str, ToolSpec] = {}

    def tool(
        self,
        permission: Permission,
        *,
        title: str,
        annotations: ToolAnnotations,
        forced: Mapping[str, Any] | None = None,
    ) -> Callable[[ToolFunction], ToolFunction]:
        """Declare a tool needing `permission`; `forced` fixes fields of its request model (no longer arguments)."""

        def declare(function: ToolFunction) -> ToolFunction:
            self._add(_spec(function, permission, title, annotations, dict(forced or {})))
            return function

        return declare

    def offer(self, operation: Operation, tool: Tool) -> None:
        """Offer a catalogue operation as a tool: its request model's fields and its other parameters (path and
        query ones) as the tool's arguments; the namespace and the caller from the call."""
        taken = signature(operation)
        body = taken.body
        request = (body.name, body.model) if body is not None else None
        passed = [
            inspect.Parameter(p.name, _KEYWORD, annotation=p.annotation, default=p.default)
            for p in taken.parameters
            if p.kind in ("path", "query")
        ]

        answered_as = answer_format(taken.response) if tool.text else None

        def run(call: ToolCall, **arguments: Any) -> Any:
            wanted = arguments.pop(FORMAT_ARGUMENT, "text")
            if taken.takes("namespace"):
                arguments[NAMESPACE_ARGUMENT] = call.namespace
            if taken.takes("caller"):
                arguments[CALLER_PARAMETER] = call.caller
            answer = operation.function(call.services, **arguments)
            return answered_as(answer, wanted) if answered_as is not None else answer

        if answered_as is not None:
            passed.append(inspect.Parameter(FORMAT_ARGUMENT, _KEYWORD, annotation=FormatArg, default="text"))
        name = tool.name or operation.name
        spec = _flat_spec(
            name,
            tool.description or operation.description,
            run,
            (operation.permission or Permission.READ, tool.title, ToolAnnotations(**tool.hints), dict(tool.forced)),
            request,
            passed,
            CallToolResult if answered_as is not None else taken.response,
        )
        self._add(spec)

    def _add(self, spec: ToolSpec) -> None:
        if spec.name in self._specs:
            raise ValueError(f"tool {spec.name!r} is declared twice")
        self._specs[spec.name] = spec

    @property
    def specs(self) -> tuple[ToolSpec, ...]:
        return tuple(self._specs.values())

    def check_arguments(self, name: str, arguments: Mapping[str, Any]) -> None:
        """Refuse, as HTTP refuses a body, what the SDK would let through: an argument the tool does not take (the
        SDK drops it silently), and a value no field can take (not finite, too long an integer, invalid Unicode,
        nested too deep: `rearview.domain.json_input`). ToolError `field: reason`, in HTTP's words."""
        spec = self._specs.get(name)
        if spec is None:
            return  # the SDK answers an unknown tool itself
        taken = set(spec.signature.parameters) - {"ctx"}
        for argument in arguments:
            if argument not in taken:
                shown = str(argument).encode("utf-8", "backslashreplace").decode("utf-8")[:64]
                raise ToolError(f"Error executing tool {name}: {shown}: Extra inputs are not permitted")
        try:
            check_json_value(dict(arguments))
        except RearviewError as exc:
            raise ToolError(f"Error executing tool {name}: {exc.message}") from exc

    def register(self, server: MCPServer) -> None:
        """Add every tool to `server`."""
        for spec in self._specs.values():
            server.add_tool(
                spec.sdk_function(),
                name=spec.name,
                title=spec.title,
                description=spec.description,
                annotations=spec.annotations,
            )


def _spec(
    function: Callable[..., Any],
    permission: Permission,
    title: str,
    annotations: ToolAnnotations,
    forced: dict[str, Any],
) -> ToolSpec:
    """Read the tool function's parameters: the ToolCall first, then at most one request model, then any others."""
    hints = typing.get_type_hints(function, include_extras=True)
    _, *parameters = inspect.signature(function).parameters.values()
    request: tuple[str, type[BaseModel]] | None = None
    passed: list[inspect.Parameter] = []
    for parameter in parameters:
        annotation = hints[parameter.name]
        if inspect.isclass(annotation) and issubclass(annotation, BaseModel):
            if request is not None:
                raise TypeError(f"tool {function.__name__}: more than one request model")
            request = (parameter.name, annotation)
        else:
            passed.append(parameter.replace(kind=_KEYWORD, annotation=annotation))
    description = inspect.cleandoc(function.__doc__ or "")
    needs = (permission, title, annotations, forced)
    return _flat_spec(function.__name__, description, function, needs, request, passed, hints["return"])


def _flat_spec(  # noqa: PLR0913 - one tool's parts
    name: str,
    description: str,
    function: Callable[..., Any],
    needs: tuple[Permission, str, ToolAnnotations, dict[str, Any]],
    request: tuple[str, type[BaseModel]] | None,
    passed: list[inspect.Parameter],
    returns: Any,
) -> ToolSpec:
    """The spec of a tool: `ctx`, then the passed parameters, the request model's fields, and `namespace`."""
    permission, title, annotations, forced = needs
    flat = [inspect.Parameter("ctx", _KEYWORD, annotation=Context), *passed]
    if request is not None:
        flat.extend(model_arguments(request[1], exclude=forced))
    elif forced:
        raise TypeError(f"tool {name}: `forced` needs a request model")
    flat.append(inspect.Parameter(NAMESPACE_ARGUMENT, _KEYWORD, annotation=NamespaceArg, default=None))
    signature = inspect.Signature(flat, return_annotation=returns)
    passed_names = tuple(p.name for p in passed)
    return ToolSpec(
        name, description, function, permission, title, annotations, forced, request, passed_names, signature
    )


def _as_sent(value: Any) -> Any:
    return value


def model_arguments(model: type[BaseModel], *, exclude: Collection[str] = ()) -> list[inspect.Parameter]:
    """One keyword argument per field of `model` (required ones first), each showing the field's JSON schema.

    The SDK validates an argument against its annotation, and reports a failure in its own words; so the
    annotation here accepts anything, and the model, built in `ToolSpec.call`, does the validating. A `str` field
    keeps `str` as its type (unchecked) because the SDK JSON-decodes string values of any other type: `"null"`
    would become None."""
    schema = model.model_json_schema()
    if "$defs" in schema:
        raise TypeError(f"{model.__name__}: a flat tool argument cannot refer to a shared definition")
    arguments: list[inspect.Parameter] = []
    for name, info in model.model_fields.items():
        if name in exclude:
            continue
        lax: Any = Annotated[str, PlainValidator(_as_sent)] if info.annotation is str else Any
        default = inspect.Parameter.empty if info.is_required() else info.get_default(call_default_factory=True)
        annotation = Annotated[lax, WithJsonSchema(schema["properties"][name])]
        arguments.append(inspect.Parameter(name, _KEYWORD, annotation=annotation, default=default))
    return sorted(arguments, key=lambda argument: argument.default is not inspect.Parameter.empty)
