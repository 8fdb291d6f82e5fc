"""What one command invocation builds and how it ends: settings from the environment plus options, the
services, and the mapping of user errors to `error: <message>` with exit code 2 (never a traceback)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any, NoReturn, TypeVar

import typer
from pydantic import BaseModel, ValidationError
from rich.console import Console, RenderableType

from rearview import bootstrap
from rearview.bootstrap import Services
from rearview.errors import RearviewError
from rearview.settings import Settings

# Exit code of a user error (bad input, bad configuration); click uses the same code for usage errors.
USER_ERROR_EXIT = 2


class EmbedderChoice(StrEnum):
    MINILM = "minilm"
    E5 = "e5"
    BGE_EN = "bge-en"
    BGE_ZH = "bge-zh"
    HASHING = "hashing"


DataDirOption = Annotated[
    Path | None,
    typer.Option(
        "--data-dir",
        help="Directory of the SQLite data (env REARVIEW_DATA_DIR; default .rearview)",
        show_default=False,
        file_okay=False,
    ),
]
EmbedderOption = Annotated[
    EmbedderChoice | None,
    typer.Option(
        "--embedder",
        help="e5 (offline, multilingual), minilm (offline, English), bge-en, bge-zh, or hashing (fast, lexical) "
        "(env REARVIEW_EMBEDDER; default e5)",
        show_default=False,
        case_sensitive=False,
    ),
]
JsonOption = Annotated[bool, typer.Option("--json", help="Print the result as JSON")]
R = TypeVar("R", bound=BaseModel)


def stdout_console() -> Console:
    """A console on the current stdout (looked up per call, so runners that swap stdout see the output)."""
    return Console(highlight=False, soft_wrap=False)


def print_result(result: R, as_json: bool, rendered: Callable[[R], RenderableType]) -> None:
    """A command's result on stdout: as indented JSON with --json, else as `rendered` draws it."""
    if as_json:
        typer.echo(result.model_dump_json(indent=2))
    else:
        stdout_console().print(rendered(result))


def stderr_console() -> Console:
    return Console(stderr=True, highlight=False)


def fail(message: str) -> NoReturn:
    """Print `error: <message>` in red to stderr and exit with the user-error code."""
    stderr_console().print(f"error: {message}", style="red", markup=False, soft_wrap=True)
    raise typer.Exit(USER_ERROR_EXIT)


def describe_validation_error(exc: ValidationError) -> str:
    """One line per broken field, `field: message`, the way the HTTP API names fields."""
    parts = []
    for err in exc.errors():
        loc = ".".join(str(p) for p in err["loc"]) or "input"
        parts.append(f"{loc}: {err['msg']}")
    return "; ".join(parts)


@contextmanager
def user_errors() -> Iterator[None]:
    """Turn domain and validation errors raised inside the block into a clean message and exit code 2."""
    try:
        yield
    except RearviewError as exc:
        fail(exc.message)
    except ValidationError as exc:
        fail(describe_validation_error(exc))


def build_settings(**overrides: Any) -> Settings:
    """Settings from `REARVIEW_*` variables, with every option the user gave (not None) taking precedence."""
    given = {key: value for key, value in overrides.items() if value is not None}
    with user_errors():
        return Settings(**given)


@contextmanager
def open_services(data_dir: Path | None, embedder: EmbedderChoice | None) -> Iterator[Services]:
    """Build the settings once, then the services; close them on the way out. User errors exit 2."""
    settings = build_settings(data_dir=data_dir, embedder=embedder.value if embedder else None)
    with user_errors():
        services = bootstrap.build(settings)
        try:
            yield services
        finally:
            services.close()
