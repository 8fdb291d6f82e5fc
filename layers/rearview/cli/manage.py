"""`rearview ls`, `edit`, `history`, `export` and `erase`: seeing what a namespace remembers and managing it by
hand, on the local data directory or (with --url) on a server."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Annotated, TextIO

import typer

from rearview.cli import manage_render
from rearview.cli.invocation import (
    DataDirOption,
    EmbedderOption,
    JsonOption,
    open_services,
    print_result,
    user_errors,
)
from rearview.cli.request_options import KindChoice, described, request_from_options
from rearview.cli.target import remote_target, run
from rearview.domain.edit import MemoryEdit
from rearview.domain.listing import ListQuery
from rearview.service.manage.transfer import TransferService

NamespaceArgument = Annotated[str, typer.Argument(help="Namespace, e.g. acme:u-42")]
MemoryIdArgument = Annotated[str, typer.Argument(help="The memory's id (as `rearview ls` shows it)")]


def ls(
    ctx: typer.Context,
    namespace: NamespaceArgument,
    layer: Annotated[str | None, typer.Option(help=described(ListQuery, "layer"))] = None,
    tag: Annotated[str | None, typer.Option(help=described(ListQuery, "tag"))] = None,
    event_type: Annotated[str | None, typer.Option(help=described(ListQuery, "event_type"))] = None,
    kind: Annotated[KindChoice | None, typer.Option(help=described(ListQuery, "kind"))] = None,
    entity: Annotated[str | None, typer.Option(help=described(ListQuery, "entity"))] = None,
    metadata: Annotated[str | None, typer.Option(help=described(ListQuery, "metadata"))] = None,
    since: Annotated[str | None, typer.Option(help=described(ListQuery, "since"))] = None,
    until: Annotated[str | None, typer.Option(help=described(ListQuery, "until"))] = None,
    include_superseded: Annotated[
        bool, typer.Option("--include-superseded", help=described(ListQuery, "include_superseded"))
    ] = False,
    limit: Annotated[int, typer.Option(help=described(ListQuery, "limit"))] = 50,
    cursor: Annotated[str | None, typer.Option(help=described(ListQuery, "cursor"))] = None,
    data_dir: DataDirOption = None,
    embedder: EmbedderOption = None,
    as_json: JsonOption = False,
) -> None:
    """List memories newest first, a page at a time (the next page's --cursor is printed at the end)."""
    with user_errors():
        query = request_from_options(ListQuery, ctx)
    page = run(ctx, data_dir, embedder, "list_memories", namespace, query)
    print_result(page, as_json, manage_render.memory_page)


def edit(
    ctx: typer.Context,
    namespace: NamespaceArgument,
    memory_id: MemoryIdArgument,
    content: Annotated[str | None, typer.Option(help=described(MemoryEdit, "content"))] = None,
    tags: Annotated[list[str] | None, typer.Option("--tag", help=described(MemoryEdit, "tags", "repeatable"))] = None,
    entities: Annotated[
        list[str] | None, typer.Option("--entity", help=described(MemoryEdit, "entities", "repeatable"))
    ] = None,
    importance: Annotated[float | None, typer.Option(help=described(MemoryEdit, "importance"))] = None,
    confidence: Annotated[float | None, typer.Option(help=described(MemoryEdit, "confidence"))] = None,
    dimension: Annotated[str | None, typer.Option(help=described(MemoryEdit, "dimension"))] = None,
    metadata: Annotated[str | None, typer.Option(help=described(MemoryEdit, "metadata", "JSON"))] = None,
    source: Annotated[str | None, typer.Option(help=described(MemoryEdit, "source"))] = None,
    expires_at: Annotated[str | None, typer.Option(help=described(MemoryEdit, "expires_at"))] = None,
    ttl_seconds: Annotated[int | None, typer.Option(help=described(MemoryEdit, "ttl_seconds"))] = None,
    if_version: Annotated[
        int | None, typer.Option("--if-version", help="Refuse the edit unless the memory is still at this version")
    ] = None,
    data_dir: DataDirOption = None,
    embedder: EmbedderOption = None,
    as_json: JsonOption = False,
) -> None:
    """Correct a memory: its text, tags, entities, importance, metadata, source or expiry, or a fact's confidence or
    dimension (version + 1; the earlier version stays in its history)."""
    with user_errors():
        change = request_from_options(MemoryEdit, ctx)
    memory = run(ctx, data_dir, embedder, "edit_memory", namespace, memory_id, change, if_version)
    print_result(memory, as_json, manage_render.memory_detail)


def history(
    ctx: typer.Context,
    namespace: NamespaceArgument,
    memory_id: MemoryIdArgument,
    data_dir: DataDirOption = None,
    embedder: EmbedderOption = None,
    as_json: JsonOption = False,
) -> None:
    """A memory's earlier versions and the facts it superseded, oldest first, with what changed each."""
    found = run(ctx, data_dir, embedder, "memory_history", namespace, memory_id)
    print_result(found, as_json, manage_render.memory_history)


def export(
    ctx: typer.Context,
    namespace: NamespaceArgument,
    output: Annotated[
        Path | None, typer.Option("--output", "-o", help="Write to this file (default: standard output)")
    ] = None,
    data_dir: DataDirOption = None,
    embedder: EmbedderOption = None,
) -> None:
    """Every memory of the namespace as ndjson (one memory and its history per line, newest first), streamed: what
    `POST .../import` and `rearview import --restore` take back."""
    remote = remote_target(ctx)
    target = output.open("w", encoding="utf-8") if output else sys.stdout
    count = 0
    try:
        if remote is not None:
            with user_errors(), remote.client() as client:
                count = _write_lines(_remote_lines(client.export_text(namespace)), target)
        else:
            with open_services(data_dir, embedder) as services:
                count = _write_lines(_local_lines(services.transfer, namespace), target)
    finally:
        if output:
            target.close()
    if output:
        typer.echo(f"exported {count} memories to {output}", err=True)


def _remote_lines(chunks: Iterator[str]) -> Iterator[str]:
    for chunk in chunks:
        yield from (line for line in chunk.splitlines() if line.strip())


def _local_lines(transfer: TransferService, namespace: str) -> Iterator[str]:
    cursor: str | None = None
    while True:
        page = transfer.export_page(namespace, cursor)
        yield from page.lines
        if page.next_cursor is None:
            return
        cursor = page.next_cursor


def _write_lines(lines: Iterator[str], target: TextIO) -> int:
    count = 0
    for line in lines:
        target.write(line + "\n")
        count += 1
    return count


def erase(
    ctx: typer.Context,
    namespace: NamespaceArgument,
    subtree: Annotated[bool, typer.Option("--subtree", help="Also every namespace under it")] = False,
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Do not ask first")] = False,
    data_dir: DataDirOption = None,
    embedder: EmbedderOption = None,
    as_json: JsonOption = False,
) -> None:
    """Erase a namespace for good (with --subtree, every namespace under it): every layer, history, the index,
    consolidation's records, and the API keys whose whole scope is gone. Asks first unless --yes."""
    if not yes:
        below = " and every namespace under it" if subtree else ""
        typer.confirm(f"Erase everything in {namespace}{below}, for good?", abort=True, err=True)
    receipt = run(ctx, data_dir, embedder, "erase_namespace", namespace, subtree)
    print_result(receipt, as_json, manage_render.erase_receipt)
