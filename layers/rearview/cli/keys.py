"""`rearview keys create|list|revoke`: API keys, in the data directory (REARVIEW_DATA_DIR), or on a remote server
through its admin routes when `--url` is given.

A new key is printed once; only a hash of its secret is stored, so it can never be shown again.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from typing import Annotated, Any

import typer
from rich.table import Table

from rearview.bootstrap import build_key_store
from rearview.cli.invocation import DataDirOption, JsonOption, build_settings, fail, stdout_console, user_errors
from rearview.cli.remote import remote_target
from rearview.clock import SystemClock
from rearview.domain.access import ApiKey
from rearview.domain.permissions import parse_permissions
from rearview.service.access import AccessService

keys_app = typer.Typer(
    name="keys",
    help="API keys: create (printed once), list, revoke. Local data directory, or --url for a remote server.",
    no_args_is_help=True,
)

_DURATION = re.compile(r"^\s*(\d+)\s*([smhdw])\s*$")
_UNIT_SECONDS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}


def parse_duration(text: str) -> timedelta:
    """`30d`, `12h`, `2w`, `90m`, `45s` -> a timedelta; `fail`s on anything else."""
    match = _DURATION.match(text)
    if not match or int(match.group(1)) == 0:
        fail(f"expires-in: expected a positive number and a unit s, m, h, d or w, e.g. 30d (got {text!r})")
    return timedelta(seconds=int(match.group(1)) * _UNIT_SECONDS[match.group(2)])


@contextmanager
def _local_access(data_dir: Any) -> Iterator[AccessService]:
    """The AccessService over the configured backend's key store (the data directory's SQLite file locally)."""
    settings = build_settings(data_dir=data_dir)
    if settings.backend == "memory":
        fail("keys: backend memory keeps no key past this command; use backend sqlite or aws, or --url")
    with user_errors():
        store = build_key_store(settings)
        try:
            yield AccessService(store, SystemClock())
        finally:
            store.close()


def _listed(key: ApiKey, now: datetime) -> dict[str, Any]:
    status = "revoked" if key.revoked_at else ("expired" if key.expires_at and now >= key.expires_at else "active")
    return {
        "key_id": key.key_id,
        "namespace": key.scope,
        "permissions": [p.value for p in key.permissions],
        "created_at": key.created_at.isoformat(),
        "expires_at": key.expires_at.isoformat() if key.expires_at else None,
        "revoked_at": key.revoked_at.isoformat() if key.revoked_at else None,
        "description": key.description,
        "status": status,
    }


@keys_app.command("create")
def create(
    ctx: typer.Context,
    namespace: Annotated[
        str, typer.Option("--namespace", help="The key's scope: this namespace and every one under it, e.g. acme")
    ],
    permissions: Annotated[
        str, typer.Option("--permissions", help="Comma-separated: read, write, forget, consolidate, admin")
    ],
    expires_in: Annotated[
        str | None, typer.Option("--expires-in", help="Expire after this long: 30d, 12h, 2w ... (default never)")
    ] = None,
    description: Annotated[str | None, typer.Option("--description", help="Who or what uses the key")] = None,
    data_dir: DataDirOption = None,
    as_json: JsonOption = False,
) -> None:
    """Create an API key and print it. It is shown this once: store it now."""
    with user_errors():
        granted = [p.value for p in parse_permissions(permissions)]
    if not granted:
        fail("permissions: at least one of read, write, forget, consolidate, admin")
    delta = parse_duration(expires_in) if expires_in else None
    remote = remote_target(ctx)
    if remote is not None:
        expires_at = datetime.now(UTC) + delta if delta else None
        with user_errors():
            created = remote.client().create_key(namespace, granted, expires_at, description)
        plaintext = str(created.pop("key"))
        listed = created
    else:
        with _local_access(data_dir) as access:
            expires_at = access.clock.now() + delta if delta else None
            key, plaintext = access.create_key(namespace, granted, expires_at, description)
            listed = _listed(key, access.clock.now())
    if as_json:
        typer.echo(json.dumps({**listed, "key": plaintext}, indent=2))
        return
    stdout_console().print(plaintext, markup=False)
    typer.echo(
        f"key {listed['key_id']}: namespace {listed['namespace']}, permissions {','.join(listed['permissions'])}, "
        f"expires {listed['expires_at'] or 'never'}. Store it now: it is not shown again.",
        err=True,
    )


@keys_app.command("list")
def list_keys(ctx: typer.Context, data_dir: DataDirOption = None, as_json: JsonOption = False) -> None:
    """Every key (never its secret): id, scope, permissions, status."""
    remote = remote_target(ctx)
    if remote is not None:
        with user_errors():
            rows = remote.client().list_keys()
    else:
        with _local_access(data_dir) as access:
            now = access.clock.now()
            rows = [_listed(key, now) for key in access.list_keys()]
    if as_json:
        typer.echo(json.dumps(rows, indent=2))
        return
    if not rows:
        stdout_console().print("no API keys (the local server stays open on loopback until one exists)", markup=False)
        return
    table = Table(title="API keys", title_justify="left")
    # The id is what `keys revoke` takes: never wrapped, so it can be copied whole.
    table.add_column("key id", no_wrap=True, min_width=16)
    for column in ("namespace", "permissions", "status", "created", "expires", "description"):
        table.add_column(column, overflow="fold")
    for row in rows:
        table.add_row(
            row["key_id"],
            row["namespace"],
            ",".join(row["permissions"]),
            row["status"],
            str(row["created_at"])[:16],
            str(row["expires_at"] or "-")[:16],
            row.get("description") or "-",
        )
    stdout_console().print(table)


@keys_app.command("revoke")
def revoke(
    ctx: typer.Context,
    key_id: Annotated[str, typer.Argument(help="The key's id, as listed")],
    data_dir: DataDirOption = None,
    as_json: JsonOption = False,
) -> None:
    """Revoke a key, at once and for good."""
    remote = remote_target(ctx)
    if remote is not None:
        with user_errors():
            row = remote.client().revoke_key(key_id)
    else:
        with _local_access(data_dir) as access, user_errors():
            key = access.revoke(key_id)
            row = _listed(key, access.clock.now())
    if as_json:
        typer.echo(json.dumps(row, indent=2))
    else:
        stdout_console().print(f"revoked {row['key_id']} (namespace {row['namespace']})", markup=False)
