"""The `rearview` command line (typer + rich): serve, remember, recall, forget, consolidate, stats, import.

Settings come from `REARVIEW_*` variables, overridden by each command's options, and are built once per
invocation; the services come from `rearview.bootstrap.build`. User errors print `error: <message>` to stderr
and exit 2.
"""

from __future__ import annotations

import typer

from rearview.cli.maintenance import consolidate, forget, stats
from rearview.cli.recall import recall
from rearview.cli.serve import serve
from rearview.cli.write import import_jsonl, remember

app = typer.Typer(
    name="rearview",
    help="Rearview: long-term memory for LLM agents, on this machine.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
app.command("serve")(serve)
app.command("remember")(remember)
app.command("recall")(recall)
app.command("forget")(forget)
app.command("consolidate")(consolidate)
app.command("stats")(stats)
app.command("import")(import_jsonl)

__all__ = ["app"]
