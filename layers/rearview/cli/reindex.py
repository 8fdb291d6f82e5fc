"""`rearview reindex [NAMESPACE]`: rebuild the search index (OpenSearch, backend aws) from the store; with
`--embedder`, re-embed the embedded backend's data with another embedder (REARVIEW_EMBEDDER)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from rearview.cli.invocation import (
    DataDirOption,
    EmbedderChoice,
    JsonOption,
    build_settings,
    fail,
    open_services,
    stdout_console,
    user_errors,
)
from rearview.cli.target import remote_target
from rearview.errors import ConfigurationError


def reindex(
    ctx: typer.Context,
    namespace: Annotated[str | None, typer.Argument(help="Namespace to rebuild (default: every namespace)")] = None,
    batch_size: Annotated[int, typer.Option(min=1, max=10_000, help="Memories per upsert")] = 200,
    embedder: Annotated[
        EmbedderChoice | None,
        typer.Option(
            "--embedder",
            help="Re-embed every memory of the embedded backend with this embedder (default REARVIEW_EMBEDDER) and "
            "record it: the way to move a data directory to another embedder. Every namespace; ids, texts, "
            "versions, history and keys stay.",
        ),
    ] = None,
    data_dir: DataDirOption = None,
    as_json: JsonOption = False,
) -> None:
    """Rebuild the index of a namespace, or of all, from the store (the source of truth; backend aws), or re-embed
    the embedded backend's data with another embedder (--embedder)."""
    if remote_target(ctx) is not None:
        fail(
            "reindex: runs beside the store, not over HTTP (a deployment's index is rebuilt by running it where "
            "REARVIEW_BACKEND=aws reaches the table and the domain); drop --url"
        )
    if embedder is not None:
        _reembed(embedder, data_dir, as_json)
        return
    from rearview.service.reindex import ReindexService

    with open_services(data_dir, None) as services, user_errors():
        if services.index_maintenance is None:
            raise ConfigurationError(
                "reindex: this backend writes its index in the store's own transaction; there is nothing to rebuild "
                "(to move its data to another embedder: reindex --embedder)"
            )
        report = ReindexService(services.store, services.index_maintenance, batch_size=batch_size).reindex(namespace)
    if as_json:
        typer.echo(json.dumps({"removed": report.removed, "indexed": report.indexed}, indent=2))
        return
    console = stdout_console()
    for each in report.indexed:
        console.print(f"{each}: {report.indexed[each]} indexed ({report.removed[each]} old documents removed)")
    console.print(f"{len(report.indexed)} namespace(s), {report.total_indexed} memories indexed")


def _reembed(embedder: EmbedderChoice, data_dir: Path | None, as_json: bool) -> None:
    from rearview import bootstrap

    settings = build_settings(data_dir=data_dir, embedder=embedder.value)
    console = stdout_console()

    def progress(namespace: str, count: int) -> None:
        if not as_json:
            console.print(f"{namespace}: {count} memories re-embedded")

    with user_errors():
        before, counts = bootstrap.reembed_local(settings, progress)
    if as_json:
        typer.echo(json.dumps({"from": before, "embedder": settings.embedder, "reembedded": counts}, indent=2))
        return
    console.print(f"{sum(counts.values())} memories in {len(counts)} namespace(s): {before} -> {settings.embedder}")
