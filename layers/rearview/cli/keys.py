"""`rearview keys create|list|limit|revoke`: API keys, in the data directory (REARVIEW_DATA_DIR), or on a remote server
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
from rearview.cli.invocation import DataDirOption, JsonOption, build_settings, fail, say, stdout_console, user_errors
from rearview.cli.store_location import store_name
from rearview.cli.target import remote_target
from rearview.clock import SystemClock
from rearview.domain.access import ApiKey
from rearview.domain.permissions import parse_permissions
from rearview.domain.quota import MAX_REQUESTS_PER_MINUTE
from rearview.service.access import AccessService

keys_app = typer.Typer(
    name="keys",
    help="API keys: create (printed once), list, limit, revoke. Local data directory, or --url for a remote server.",
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
    say(f"store: {store_name(settings)}")
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
        "requests_per_minute": key.requests_per_minute,
        "status": status,
    }


_RequestsPerMinuteOption = Annotated[
    int | None,
    typer.Option(
        "--requests-per-minute",
        min=0,
        max=MAX_REQUESTS_PER_MINUTE,
        help="The key's own request limit per minute (0: unlimited); default: the deployment's "
        "(REARVIEW_THROTTLE__REQUESTS_PER_MINUTE)",
        show_default=False,
    ),
]


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
    requests_per_minute: _RequestsPerMinuteOption = None,
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
        with user_errors(), remote.client() as client:
            answered = client.create_key(namespace, granted, expires_at, description, requests_per_minute)
        created = answered.model_dump(mode="json")
        plaintext = str(created.pop("key"))
        listed = created
    else:
        with _local_access(data_dir) as access:
            expires_at = access.clock.now() + delta if delta else None
            key, plaintext = access.create_key(namespace, granted, expires_at, description, requests_per_minute)
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
        with user_errors(), remote.client() as client:
            rows = client.list_keys().model_dump(mode="json")["keys"]
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


@keys_app.command("limit")
def limit(
    ctx: typer.Context,
    key_id: Annotated[str, typer.Argument(help="The key's id, as listed")],
    requests_per_minute: Annotated[
        str, typer.Argument(help="Requests per minute (0: unlimited), or `default` for the deployment's default")
    ],
    data_dir: DataDirOption = None,
    as_json: JsonOption = False,
) -> None:
    """Set a key's request limit per minute. On AWS the gateway's cached answer keeps the old limit for up to its
    TTL (300 s)."""
    wanted = _parse_limit(requests_per_minute)
    remote = remote_target(ctx)
    if remote is not None:
        with user_errors(), remote.client() as client:
            row = client.set_key_limit(key_id, wanted).model_dump(mode="json")
    else:
        with _local_access(data_dir) as access, user_errors():
            key = access.set_requests_per_minute(key_id, wanted)
            row = _listed(key, access.clock.now())
    if as_json:
        typer.echo(json.dumps(row, indent=2))
        return
    shown = row.get("requests_per_minute")
    said = "the default" if shown is None else ("unlimited" if shown == 0 else f"{shown} per minute")
    stdout_console().print(f"key {row['key_id']}: requests limited to {said}", markup=False)


def _parse_limit(text: str) -> int | None:
    """`default` -> None; a whole number 0..MAX -> itself; `fail`s on anything else."""
    if text.strip().lower() == "default":
        return None
    if not text.strip().isdigit() or int(text) > MAX_REQUESTS_PER_MINUTE:
        fail(f"requests_per_minute: expected 0 (unlimited) to {MAX_REQUESTS_PER_MINUTE}, or default (got {text!r})")
    return int(text)


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
        with user_errors(), remote.client() as client:
            row = client.revoke_key(key_id).model_dump(mode="json")
    else:
        with _local_access(data_dir) as access, user_errors():
            key = access.revoke(key_id)
            row = _listed(key, access.clock.now())
    if as_json:
        typer.echo(json.dumps(row, indent=2))
    else:
        stdout_console().print(f"revoked {row['key_id']} (namespace {row['namespace']})", markup=False)
