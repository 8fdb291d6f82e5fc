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
from rearview.cli.store_location import choose_data_dir, local_store_exists, missing_store_message, store_name
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
        help="Directory of the SQLite data (env REARVIEW_DATA_DIR; default: the nearest .rearview here or in a "
        "folder above, else a new one here)",
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
VerboseOption = Annotated[bool, typer.Option("--verbose", "-v", help="Also list every id")]
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
    """Settings from `REARVIEW_*` variables, with every option the user gave (not None) taking precedence; the data
    directory absolute, chosen as `store_location` says."""
    given = {key: value for key, value in overrides.items() if value is not None}
    if "data_dir" in overrides:
        given["data_dir"] = choose_data_dir(overrides["data_dir"]).path
    with user_errors():
        return Settings(**given)


def say(message: str, style: str = "dim") -> None:
    """A line about what the command talks to, on stderr (stdout stays the result's, JSON included)."""
    stderr_console().print(message, style=style, markup=False, soft_wrap=True)


@contextmanager
def open_services(
    data_dir: Path | None, embedder: EmbedderChoice | None, *, creates: bool = False
) -> Iterator[Services]:
    """Build the settings once, name the store on stderr, then build the services; close them on the way out.
    A store that does not exist yet is created only when `creates` (a command that adds memories), and said so;
    else the command stops, saying where it looked. User errors exit 2."""
    choice = choose_data_dir(data_dir)
    settings = build_settings(data_dir=choice.path, embedder=embedder.value if embedder else None)
    existed = local_store_exists(settings)
    if not existed and not creates:
        fail(missing_store_message(settings, choice.chosen_by))
    if existed:
        say(f"store: {store_name(settings)} ({choice.chosen_by})")
    with user_errors():
        services = bootstrap.build(settings)
        try:
            yield services
        finally:
            services.close()
            if not existed:
                say(
                    f"store: created a new, empty store at {store_name(settings)} ({choice.chosen_by}); "
                    "--data-dir or REARVIEW_DATA_DIR opens another",
                    style="yellow",
                )
