"""`rearview reindex [NAMESPACE]`: rebuild the search index (OpenSearch, backend aws) from the store."""

from __future__ import annotations

import json
from typing import Annotated

import typer

from rearview.cli.invocation import JsonOption, fail, open_services, stdout_console, user_errors
from rearview.cli.target import remote_target
from rearview.errors import ConfigurationError


def reindex(
    ctx: typer.Context,
    namespace: Annotated[str | None, typer.Argument(help="Namespace to rebuild (default: every namespace)")] = None,
    batch_size: Annotated[int, typer.Option(min=1, max=10_000, help="Memories per upsert")] = 200,
    as_json: JsonOption = False,
) -> None:
    """Rebuild the index of a namespace, or of all, from the store (the source of truth). Backend aws only."""
    from rearview.service.reindex import ReindexService

    if remote_target(ctx) is not None:
        fail(
            "reindex: runs beside the store, not over HTTP (a deployment's index is rebuilt by running it where "
            "REARVIEW_BACKEND=aws reaches the table and the domain); drop --url"
        )
    with open_services(None, None) as services, user_errors():
        if services.index_maintenance is None:
            raise ConfigurationError(
                "reindex: this backend writes its index in the store's own transaction; there is nothing to rebuild"
            )
        report = ReindexService(services.store, services.index_maintenance, batch_size=batch_size).reindex(namespace)
    if as_json:
        typer.echo(json.dumps({"removed": report.removed, "indexed": report.indexed}, indent=2))
        return
    console = stdout_console()
    for each in report.indexed:
        console.print(f"{each}: {report.indexed[each]} indexed ({report.removed[each]} old documents removed)")
    console.print(f"{len(report.indexed)} namespace(s), {report.total_indexed} memories indexed")
