"""The commands made from the operation catalogue: each operation the command line offers (`Command` in its row)
and that has no command of its own becomes `rearview [group] <name> NAMESPACE <path parameters> [--options]`, an
option per other parameter and per field of its request model, running through the one code path of
`rearview.cli.target` and printing the answer as JSON."""

from __future__ import annotations

import inspect
import types
import typing
from collections.abc import Callable
from typing import Annotated, Any, Union

import typer
from pydantic import BaseModel

from rearview.cli.invocation import DataDirOption, EmbedderOption, JsonOption, user_errors
from rearview.cli.request_options import request_from_options
from rearview.cli.target import run
from rearview.operations.catalogue import OPERATIONS
from rearview.operations.offers import Operation
from rearview.operations.signature import Parameter, signature

_KEYWORD = inspect.Parameter.KEYWORD_ONLY
_SHARED = ("data_dir", "embedder", "as_json")


def _option_type(annotation: Any) -> Any:
    """What typer parses an option as: a flag, a number, repeated strings, or a string the model validates."""
    if typing.get_origin(annotation) is Annotated:
        return _option_type(typing.get_args(annotation)[0])
    if typing.get_origin(annotation) in (Union, types.UnionType):
        kept = [arg for arg in typing.get_args(annotation) if arg is not type(None)]
        return _option_type(kept[0]) if len(kept) == 1 else str
    if annotation in (bool, int, float):
        return annotation
    if typing.get_origin(annotation) is list:
        return list[str]
    return str


def _option(name: str, annotation: Any, help_text: str | None, default: Any) -> inspect.Parameter:
    kind = _option_type(annotation)
    flag = f"--{name.replace('_', '-')}"
    declared = (f"{flag}/--no-{name.replace('_', '-')}",) if kind is bool else (flag,)
    option = typer.Option(*declared, help=help_text or name.replace("_", " "), show_default=kind is bool)
    optional = kind if kind is bool else kind | None
    shown = default if kind is bool else None
    return inspect.Parameter(name, _KEYWORD, annotation=Annotated[optional, option], default=shown)


def _parameters(operation: Operation) -> list[inspect.Parameter]:
    found = [inspect.Parameter("ctx", _KEYWORD, annotation=typer.Context)]
    for p in signature(operation).parameters:
        if p.kind == "namespace":
            argument = typer.Argument(help="Namespace, e.g. acme:u-42")
            found.append(inspect.Parameter(p.name, _KEYWORD, annotation=Annotated[str, argument]))
        elif p.kind == "path":
            argument = typer.Argument(help=p.description or p.name)
            found.append(inspect.Parameter(p.name, _KEYWORD, annotation=Annotated[str, argument]))
        elif p.kind == "query":
            found.append(_option(p.name, p.annotation, p.description, p.default))
        elif p.kind == "body":
            for name, info in p.model.model_fields.items():
                found.append(_option(name, info.annotation, info.description, info.default))
    shared = {"data_dir": DataDirOption, "embedder": EmbedderOption, "as_json": JsonOption}
    defaults = {"data_dir": None, "embedder": None, "as_json": False}
    found.extend(inspect.Parameter(n, _KEYWORD, annotation=shared[n], default=defaults[n]) for n in _SHARED)
    return found


def _argument(p: Parameter, ctx: typer.Context, given: dict[str, Any]) -> Any:
    if p.kind == "body":
        model: type[BaseModel] = p.model
        return request_from_options(model, ctx)
    return given[p.name] if given.get(p.name) is not None else p.default


def command(operation: Operation) -> Callable[..., None]:
    """The command of `operation`: its arguments and options from the row's signature."""
    taken = [p for p in signature(operation).parameters if p.kind != "caller"]

    def run_operation(ctx: typer.Context, **given: Any) -> None:
        with user_errors():
            arguments = {p.name: _argument(p, ctx, given) for p in taken}
        answer = run(ctx, given["data_dir"], given["embedder"], operation.name, **arguments)
        typer.echo(answer.model_dump_json(indent=2) if isinstance(answer, BaseModel) else str(answer))

    parameters = _parameters(operation)
    run_operation.__name__ = operation.name
    run_operation.__doc__ = operation.description
    run_operation.__signature__ = inspect.Signature(parameters)  # type: ignore[attr-defined]
    run_operation.__annotations__ = {p.name: p.annotation for p in parameters}
    return run_operation


def add_operation_commands(app: typer.Typer) -> None:
    """Add a command for every operation the catalogue offers on the command line that has none of its own."""
    groups = {group.name: group.typer_instance for group in app.registered_groups if group.typer_instance}
    for operation in OPERATIONS:
        offer = operation.command
        if offer is None:
            continue
        target = app if offer.group is None else groups.get(offer.group)
        if target is None:
            target = groups[offer.group] = typer.Typer(name=offer.group, no_args_is_help=True)
            app.add_typer(target, name=offer.group)
        if offer.name not in {info.name for info in target.registered_commands}:
            target.command(offer.name)(command(operation))
