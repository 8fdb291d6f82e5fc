"""`rearview serve`: the HTTP API on this machine (rearview.api.local_server) over the SQLite backend, with the
background worker that runs consolidation by itself (`REARVIEW_HINDSIGHT__WORKER=false` turns it off)."""

from __future__ import annotations

import logging
import signal
from types import FrameType
from typing import Annotated

import typer

from rearview import bootstrap
from rearview.api.local_server import LocalServer, auth_banner, check_bind
from rearview.api.mcp_http import MCP_PATH
from rearview.api.routes import DOCS_PATH, HEALTH_PATH, UI_PATH
from rearview.cli.invocation import (
    DataDirOption,
    EmbedderOption,
    build_settings,
    fail,
    stderr_console,
    stdout_console,
    user_errors,
)
from rearview.cli.store_location import store_name
from rearview.service.hindsight.local_worker import LocalConsolidationWorker, WorkerCounts
from rearview.settings import HindsightSettings, Settings

# Addresses that mean "every interface": printed with a loopback URL the user can actually open.
_WILDCARDS = frozenset({"0.0.0.0", "::", "[::]"})


class _Terminated(Exception):
    """SIGTERM, turned into an exception so that the server loop unwinds and closes the database cleanly."""


def _raise_terminated(signum: int, frame: FrameType | None) -> None:
    raise _Terminated


def serve(
    host: Annotated[
        str | None,
        typer.Option(
            help="Interface to bind; non-loopback needs a key or --api-token (env REARVIEW_HOST; default 127.0.0.1)",
            show_default=False,
        ),
    ] = None,
    port: Annotated[
        int | None,
        typer.Option(help="Port (env REARVIEW_PORT; default 8765)", show_default=False),
    ] = None,
    api_token: Annotated[
        str | None,
        typer.Option(
            help="Bootstrap admin token: a Bearer credential over every namespace with every permission",
            envvar="REARVIEW_API_TOKEN",
            show_default=False,
        ),
    ] = None,
    data_dir: DataDirOption = None,
    embedder: EmbedderOption = None,
) -> None:
    """Serve the HTTP API until interrupted (Ctrl-C or SIGTERM)."""
    settings = build_settings(
        host=host,
        port=port,
        api_token=api_token,
        data_dir=data_dir,
        embedder=embedder.value if embedder else None,
    )
    _configure_logging(settings.log_level)
    with user_errors():
        # Refuse an exposed bind before loading the embedder and opening the database.
        check_bind(settings.host, settings.api_token, keys_configured=bootstrap.keys_in_data_dir(settings))
        services = bootstrap.build(settings)
    try:
        with user_errors():
            try:
                server = LocalServer(settings, services)
            except OSError as exc:
                fail(f"port: cannot listen on {settings.host}:{settings.port} ({exc.strerror or exc})")
        # The worker stops (gracefully, its running job winding down) after the server, before the services close.
        # Retention's timers (sweep, working-memory purge) stop with it.
        with bootstrap.local_consolidation(services) as worker, bootstrap.local_maintenance(services):
            _announce(server, settings, worker)
            _serve_until_stopped(server)
        if worker is not None:
            stderr_console().print(f"Rearview: {_worker_summary(worker.counts())}", markup=False)
    finally:
        services.close()


def _serve_until_stopped(server: LocalServer) -> None:
    """Serve until Ctrl-C or SIGTERM, then stop taking requests."""
    previous = signal.signal(signal.SIGTERM, _raise_terminated)
    try:
        server.serve_forever(announce=False)
    except (KeyboardInterrupt, _Terminated):
        stderr_console().print("Rearview: shutting down")
    finally:
        signal.signal(signal.SIGTERM, previous)
        server.shutdown()


def _worker_summary(counts: WorkerCounts) -> str:
    return (
        f"consolidation worker: {counts.ran} runs, {counts.failed} failed, {counts.folded} jobs folded, "
        f"{counts.dropped} dropped"
    )


def _configure_logging(level: str) -> None:
    name = level.upper()
    if not isinstance(logging.getLevelName(name), int):
        fail(f"log_level: unknown level {level!r} (use DEBUG, INFO, WARNING or ERROR)")
    logging.basicConfig(level=name, format="%(asctime)s %(levelname)s %(name)s: %(message)s")


def _announce(server: LocalServer, settings: Settings, worker: LocalConsolidationWorker | None) -> None:
    out = stdout_console()
    url = server.url
    out.print(f"Rearview listening on {url}", markup=False)
    if settings.host in _WILDCARDS:
        out.print(f"  (every interface; on this machine: http://127.0.0.1:{server.port})", markup=False)
    out.print(f"  inspector: {url}{UI_PATH}", markup=False)
    out.print(f"  MCP:       {url}{MCP_PATH} (Streamable HTTP; `rearview mcp` for stdio)", markup=False)
    out.print(f"  health:    {url}{HEALTH_PATH}", markup=False)
    out.print(f"  API docs:  {url}{DOCS_PATH}", markup=False)
    out.print(f"  data:      {store_name(settings)} (embedder {settings.embedder})", markup=False)
    out.print(f"  {auth_banner(server.gate)}", markup=False)
    out.print(f"  {hindsight_banner(settings.hindsight, worker is not None)}", markup=False)


def hindsight_banner(hindsight: HindsightSettings, worker: bool) -> str:
    """One line for the start-up announcement: whether consolidation runs by itself, and on what."""
    if not worker:
        return "hindsight: worker off (REARVIEW_HINDSIGHT__WORKER); consolidation runs only when asked"
    triggers = [
        f"{hindsight.failure_streak} failures in a row" if hindsight.failure_streak else "",
        f"{hindsight.count_trigger} new episodes" if hindsight.count_trigger else "",
        "session end" if hindsight.session_end else "",
        f"every {hindsight.schedule_hours:g} h" if hindsight.schedule_hours else "",
    ]
    named = ", ".join(t for t in triggers if t) or "no trigger (all off)"
    return f"hindsight: consolidation runs by itself on {named}"
