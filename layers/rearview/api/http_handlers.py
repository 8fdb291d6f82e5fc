"""The HTTP API's route functions, made from the operation catalogue: each takes its request as the operation's
signature says (path parameters, a JSON body or, for a GET, the query string, query parameters; Powertools
validates them against the OpenAPI schema), calls the operation, and returns its model.

`route_function(operation, services, app)` makes one; the few operations whose request or answer HTTP shapes
itself (a status by result, a header, ndjson) have theirs in `rearview.api.http_manage`.
"""

from __future__ import annotations

import inspect
import types
import typing
from collections.abc import Callable
from typing import Annotated, Any, Protocol, Union
from urllib.parse import unquote

import annotated_types
from aws_lambda_powertools.event_handler.openapi.params import Body, Path, Query
from pydantic import BaseModel, ValidationError
from pydantic.fields import FieldInfo

from rearview.api import field_errors
from rearview.bootstrap import Services
from rearview.domain.access import Principal
from rearview.domain.namespaces import Namespace
from rearview.errors import InvalidInput
from rearview.operations.offers import NAMESPACE_SEGMENT, Operation
from rearview.operations.signature import Parameter, signature


class ResolvingApp(Protocol):
    """What the route functions ask of the resolver that calls them (`rearview.api.http.RearviewResolver`)."""

    def principal(self) -> Principal:
        """The principal of the request being resolved."""
        ...

    def namespace(self) -> Namespace:
        """The namespace of the request being resolved, validated by the access check."""
        ...


NAMESPACE_DESCRIPTION = "1 to 4 `:`-separated segments of `[A-Za-z0-9_.@-]{1,64}`, e.g. `acme:u-42`"
_KEYWORD = inspect.Parameter.KEYWORD_ONLY
# What pydantic's constraint metadata is called as a keyword of Powertools' Query.
_CONSTRAINTS = {
    annotated_types.MaxLen: ("max_length", "max_length"),
    annotated_types.MinLen: ("min_length", "min_length"),
    annotated_types.Ge: ("ge", "ge"),
    annotated_types.Le: ("le", "le"),
    annotated_types.Gt: ("gt", "gt"),
    annotated_types.Lt: ("lt", "lt"),
}


def decoded(value: str) -> str:
    return unquote(value, errors="strict")


def validated(model: type[BaseModel], data: dict[str, Any]) -> Any:
    """`model` from request parts, a validation error as the API's 422 (naming the field)."""
    try:
        return model.model_validate({k: v for k, v in data.items() if v is not None})
    except ValidationError as exc:
        message, field = field_errors.describe(exc.errors())
        raise InvalidInput(message, field=field) from None


def _query(annotation: Any, field: FieldInfo) -> Any:
    """A query parameter of `annotation`, with the field's description and constraints."""
    keywords: dict[str, Any] = {"description": field.description}
    for constraint in field.metadata:
        named = _CONSTRAINTS.get(type(constraint))
        if named is not None:
            keywords[named[0]] = getattr(constraint, named[1])
        elif getattr(constraint, "pattern", None):
            keywords["pattern"] = constraint.pattern
    return Annotated[annotation, Query(**keywords)]


def _query_type(annotation: Any) -> Any:
    """What a query string carries for a field: its own type, or for an object (a metadata filter) its JSON text,
    which the model parses."""
    origin = typing.get_origin(annotation)
    if origin in (Union, types.UnionType):
        return _query_type(next(arg for arg in typing.get_args(annotation) if arg is not type(None))) | None
    if origin is dict or origin is Annotated and typing.get_origin(typing.get_args(annotation)[0]) is dict:
        return str
    return annotation


def _parameters(operation: Operation) -> list[inspect.Parameter]:
    """The route function's parameters, as Powertools reads them."""
    found: list[inspect.Parameter] = []
    for p in signature(operation).parameters:
        if p.kind == "namespace":
            annotation: Any = Annotated[str, Path(description=NAMESPACE_DESCRIPTION)]
            found.append(inspect.Parameter(NAMESPACE_SEGMENT, _KEYWORD, annotation=annotation))
        elif p.kind == "path":
            annotation = Annotated[str, Path(description=p.description)]
            found.append(inspect.Parameter(p.wire, _KEYWORD, annotation=annotation))
        elif p.kind == "body" and operation.route.method == "GET":
            for name, info in p.model.model_fields.items():
                default = inspect.Parameter.empty if info.is_required() else info.get_default(call_default_factory=True)
                annotation = _query(_query_type(info.annotation), info)
                found.append(inspect.Parameter(name, _KEYWORD, annotation=annotation, default=default))
        elif p.kind == "body":
            annotation = Annotated[p.annotation, Body()]
            found.append(inspect.Parameter(p.name, _KEYWORD, annotation=annotation, default=p.default))
        elif p.kind == "query":
            annotation = _query(p.field.annotation, p.field)
            found.append(inspect.Parameter(p.name, _KEYWORD, annotation=annotation, default=p.default))
    return sorted(found, key=lambda parameter: parameter.default is not inspect.Parameter.empty)


def arguments(operation: Operation, app: ResolvingApp, given: dict[str, Any]) -> dict[str, Any]:
    """The operation's arguments from the route function's: the namespace and the caller from the access check,
    path parameters URL-decoded, a GET's request model built from its query string."""
    found: dict[str, Any] = {}
    for p in signature(operation).parameters:
        found[p.name] = _argument(operation, app, p, given)
    return found


def _argument(operation: Operation, app: ResolvingApp, p: Parameter, given: dict[str, Any]) -> Any:
    if p.kind == "namespace":
        return app.namespace()
    if p.kind == "caller":
        return app.principal()
    if p.kind == "path":
        return decoded(given[p.wire])
    if p.kind == "body" and operation.route.method == "GET":
        return validated(p.model, {name: given.get(name) for name in p.model.model_fields})
    return given.get(p.name, p.default)


def route_function(operation: Operation, services: Services, app: ResolvingApp) -> Callable[..., Any]:
    """The route function of `operation` over `services`."""
    response = signature(operation).response

    def route(**given: Any) -> Any:
        return operation.function(services, **arguments(operation, app, given))

    parameters = _parameters(operation)
    route.__name__ = operation.name
    route.__signature__ = inspect.Signature(parameters, return_annotation=response)  # type: ignore[attr-defined]
    route.__annotations__ = {**{p.name: p.annotation for p in parameters}, "return": response}
    return route
