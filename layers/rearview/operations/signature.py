"""What an operation takes and answers, read from its function's annotations: the edges (HTTP, MCP, the command line,
the Python client) offer each parameter by its kind.

The catalogue imports its types for type checking only, so its annotations are strings; they are resolved here
against the domain's names (`rearview.domain`, where every request and response model lives).
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import types
import typing
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from typing import Annotated, Any, Literal, Union

from pydantic import BaseModel, Field
from pydantic.fields import FieldInfo

import rearview.domain
from rearview.operations.offers import PATH_NAMES, Operation

# namespace: the `{ns}` the operation acts in; caller: the authenticated principal; path: a segment of the path;
# body: the request model; query: any other parameter.
Kind = Literal["namespace", "caller", "path", "body", "query"]
NAMESPACE_PARAMETER = "namespace"
CALLER_PARAMETER = "caller"
REQUIRED = inspect.Parameter.empty


@dataclass(frozen=True)
class Parameter:
    """One parameter of an operation's function, its type resolved."""

    name: str
    kind: Kind
    annotation: Any
    default: Any = REQUIRED

    @property
    def required(self) -> bool:
        return self.default is REQUIRED

    @property
    def wire(self) -> str:
        """The parameter's name in a path (`memory_id` is `{id}`), else its own."""
        return PATH_NAMES.get(self.name, self.name) if self.kind == "path" else self.name

    @property
    def model(self) -> type[BaseModel]:
        """The request model of a body parameter (its optional form unwrapped)."""
        model = model_of(self.annotation)
        if model is None:
            raise TypeError(f"{self.name}: not a request model")
        return model

    @property
    def field(self) -> FieldInfo:
        """The pydantic field the annotation describes (its description and constraints)."""
        return FieldInfo.from_annotation(self.annotation)

    @property
    def description(self) -> str | None:
        return self.field.description


@dataclass(frozen=True)
class Signature:
    """An operation's parameters (the services left out), in order, and its response type."""

    parameters: tuple[Parameter, ...]
    response: Any

    def of_kind(self, kind: Kind) -> tuple[Parameter, ...]:
        return tuple(p for p in self.parameters if p.kind == kind)

    @property
    def body(self) -> Parameter | None:
        found = self.of_kind("body")
        return found[0] if found else None

    def takes(self, kind: Kind) -> bool:
        return bool(self.of_kind(kind))


def model_of(annotation: Any) -> type[BaseModel] | None:
    """The pydantic model an annotation names (`Model` or `Model | None`), else None."""
    if inspect.isclass(annotation) and issubclass(annotation, BaseModel):
        return annotation
    if typing.get_origin(annotation) in (Union, types.UnionType):
        models = [arg for arg in typing.get_args(annotation) if arg is not type(None)]
        if len(models) == 1:
            return model_of(models[0])
    return None


@cache
def _names() -> Mapping[str, Any]:
    """The names an operation's annotations may use: the domain's public names, and `Annotated` and `Field`."""
    names: dict[str, Any] = {"Annotated": Annotated, "Field": Field}
    for module in pkgutil.iter_modules(rearview.domain.__path__):
        loaded = importlib.import_module(f"{rearview.domain.__name__}.{module.name}")
        for name, value in vars(loaded).items():
            if not name.startswith("_") and not isinstance(value, types.ModuleType):
                names.setdefault(name, value)
    return names


def _resolved(annotation: Any, globalns: Mapping[str, Any]) -> Any:
    if isinstance(annotation, str):
        return eval(annotation, {**_names(), **globalns})  # noqa: S307 - the catalogue's own annotations
    return annotation


_SIGNATURES: dict[str, Signature] = {}


def signature(operation: Operation) -> Signature:
    """The operation's parameters and response, resolved once."""
    found = _SIGNATURES.get(operation.name)
    if found is None:
        found = _SIGNATURES[operation.name] = _read(operation)
    return found


def _read(operation: Operation) -> Signature:
    function = operation.function
    globalns = {k: v for k, v in vars(inspect.getmodule(function)).items() if not k.startswith("__")}
    _, *declared = inspect.signature(function).parameters.values()
    parameters = []
    for declared_parameter in declared:
        annotation = _resolved(declared_parameter.annotation, globalns)
        kind = _kind(operation, declared_parameter.name, annotation)
        parameters.append(Parameter(declared_parameter.name, kind, annotation, declared_parameter.default))
    response = _resolved(inspect.signature(function).return_annotation, globalns)
    return Signature(tuple(parameters), response)


def _kind(operation: Operation, name: str, annotation: Any) -> Kind:
    if name == NAMESPACE_PARAMETER:
        return "namespace"
    if name == CALLER_PARAMETER:
        return "caller"
    if PATH_NAMES.get(name, name) in operation.route.parameters:
        return "path"
    return "body" if model_of(annotation) is not None else "query"
