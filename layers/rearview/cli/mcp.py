"""`rearview mcp`: the MCP server over stdio, for desktop agents that launch it as a subprocess.

It works on the local data directory (REARVIEW_DATA_DIR) and, as `rearview serve` does, runs the background
consolidation worker (`REARVIEW_HINDSIGHT__WORKER=false` turns it off; the `consolidate` tool runs it by hand) and
the retention timers, for as long as the agent keeps it running. stdio is a local, trusted channel (whoever can start
the command can read the data directory anyway), so by default it runs in the open local mode: every namespace,
every permission, and `Settings.default_namespace` when a tool names none. With `--token` / REARVIEW_TOKEN it
acts as that API key instead: its scope is the default namespace and the limit of every call, its permissions
apply, and the key is checked again on every call, so revoking it takes effect at once.

stdout carries the protocol and nothing else; messages go to stderr.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Annotated, Any

import typer

from rearview import bootstrap
from rearview.cli.invocation import (
    DataDirOption,
    EmbedderOption,
    build_settings,
    fail,
    say,
    stderr_console,
    user_errors,
)
from rearview.cli.serve import hindsight_banner
from rearview.cli.store_location import store_name
from rearview.cli.target import remote_target
from rearview.domain.access import Principal
from rearview.service.access import AccessService

if TYPE_CHECKING:
    from rearview.api.mcp import PrincipalProvider


def token_principal(access: AccessService, token: str) -> Principal:
    """The principal of an API key (or the bootstrap admin token); raises Unauthorized if it does not hold."""
    return access.authenticate(f"Bearer {token}")


def key_principal(access: AccessService, token: str) -> PrincipalProvider:
    """A provider that authenticates `token` on every call: a key revoked or expired while the agent runs
    stops working at once."""

    def provide(scope: Mapping[str, Any] | None) -> Principal:
        return token_principal(access, token)

    return provide


def mcp(
    ctx: typer.Context,
    token: Annotated[
        str | None,
        typer.Option(
            "--token",
            envvar="REARVIEW_TOKEN",
            help="Act as this API key (its namespace scope and permissions) instead of the open local mode",
            show_default=False,
        ),
    ] = None,
    data_dir: DataDirOption = None,
    embedder: EmbedderOption = None,
) -> None:
    """Serve MCP over stdio (for desktop agents). Open local mode unless --token is given."""
    if remote_target(ctx) is not None:
        fail("mcp: --url is not supported here; point the MCP client at <url>/mcp (Streamable HTTP) instead")
    try:
        from rearview.api.mcp import create_mcp_server, fixed_principal
    except ImportError as exc:
        fail(f"mcp: the MCP server needs the `mcp` extra (pip install 'rearview-memory[mcp]'): {exc}")
    settings = build_settings(data_dir=data_dir, embedder=embedder.value if embedder else None)
    say(f"store: {store_name(settings)}")  # on stderr: stdout carries the protocol
    with user_errors():
        services = bootstrap.build(settings)
    try:
        if token:
            with user_errors():
                token_principal(services.access, token)  # refuse a bad key at start, not on the first call
            provide = key_principal(services.access, token)
        else:
            provide = fixed_principal(Principal.open_local())
        # As `rearview serve`: consolidation runs by itself (its triggers' jobs, the schedule) and the retention
        # timers purge what expired, on threads of their own, stopped before the services close.
        with bootstrap.local_consolidation(services) as worker, bootstrap.local_maintenance(services):
            stderr_console().print(
                f"Rearview MCP over stdio: {settings.data_dir.resolve()}; "
                f"{hindsight_banner(settings.hindsight, worker is not None)}",
                markup=False,
            )
            create_mcp_server(services, provide).run("stdio")
    finally:
        services.close()
