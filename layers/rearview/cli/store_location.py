"""Which store a local command opens, and saying so.

The data directory is `--data-dir`, else `REARVIEW_DATA_DIR`, else the nearest `.rearview` holding a database in the
current folder or a folder above it (as git finds `.git`: a command run from a project's subfolder opens the
project's store, and a `.rearview` in the home folder serves every folder below that has none of its own), else a
new `.rearview` in the current folder. It is always made absolute, and every local command names it on stderr, so a
command run from the wrong folder says where it looked instead of quietly answering from an empty store.

Only the commands that add memories create a store; one that reads (recall, ls, stats ...) or changes what is held
(edit, forget ...) on a store that does not exist says so and stops, naming the fixes.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from rearview.bootstrap import database_file
from rearview.settings import Settings

# The data directory's name when none is given: `.rearview`, in the current folder or one above it.
STORE_DIRNAME = ".rearview"
DATA_DIR_VARIABLE = "REARVIEW_DATA_DIR"


@dataclass(frozen=True)
class DataDirChoice:
    """The data directory a command opens (absolute) and how it was chosen, in words."""

    path: Path
    chosen_by: str


def choose_data_dir(
    option: Path | None, environ: Mapping[str, str] | None = None, cwd: Path | None = None
) -> DataDirChoice:
    """The data directory: the option, the environment variable, the nearest `.rearview` with a database at or
    above `cwd`, or a new one in `cwd`."""
    environ = os.environ if environ is None else environ
    here = (cwd or Path.cwd()).resolve()
    if option is not None:
        return DataDirChoice(_absolute(option, here), "--data-dir")
    if environ.get(DATA_DIR_VARIABLE):
        return DataDirChoice(_absolute(Path(environ[DATA_DIR_VARIABLE]), here), DATA_DIR_VARIABLE)
    for folder in (here, *here.parents):
        candidate = folder / STORE_DIRNAME
        if database_file(candidate).exists():
            where = "the current folder" if folder == here else f"{folder}, above the current folder"
            return DataDirChoice(candidate, f"found in {where}")
    return DataDirChoice(here / STORE_DIRNAME, f"no {STORE_DIRNAME} here or in a folder above")


def _absolute(path: Path, cwd: Path) -> Path:
    path = path.expanduser()
    return path if path.is_absolute() else (cwd / path).resolve()


def store_name(settings: Settings) -> str:
    """The store the settings open, as a person reads it."""
    if settings.backend == "memory":
        return "in memory (nothing is kept after this command)"
    if settings.backend == "aws":
        region = f" in {settings.aws.region}" if settings.aws.region else ""
        return f"DynamoDB table {settings.aws.table_name}{region}"
    return str(settings.data_dir)


def local_store_exists(settings: Settings) -> bool:
    """Whether the settings' store holds a database already (a store on another backend always does)."""
    return settings.backend != "sqlite" or database_file(settings.data_dir).exists()


def missing_store_message(settings: Settings, chosen_by: str) -> str:
    """Why a command that reads stops on a data directory without a store, and the ways to point it at one."""
    return (
        f"no Rearview store at {settings.data_dir} ({chosen_by}): nothing is remembered there. Run from the folder "
        f"that holds your {STORE_DIRNAME}, or pass --data-dir DIR (or set {DATA_DIR_VARIABLE}); for a server, "
        "--url http://host:port"
    )
