"""The `rearview` command line (typer + rich): serve, emulate, mcp, remember, recall, brief, feedback, forget,
consolidate, stats, import, session, keys, and ls, edit, history, export, erase (memory by hand).

Settings come from `REARVIEW_*` variables, overridden by each command's options, and are built once per
invocation; the services come from `rearview.bootstrap.build`. Each command says on stderr what it talks to (the
local store, `store_location`, or the server at --url); user errors print `error: <message>` to stderr, with the
fix where there is one, and exit 2.
"""

from __future__ import annotations

from typing import Annotated

import typer

from rearview.cli.emulate import emulate
from rearview.cli.hindsight import brief, feedback, session_app
from rearview.cli.keys import keys_app
from rearview.cli.maintenance import consolidate, forget, stats
from rearview.cli.manage import edit, erase, export, history, ls
from rearview.cli.mcp import mcp
from rearview.cli.operations import add_operation_commands
from rearview.cli.recall import recall
from rearview.cli.reindex import reindex
from rearview.cli.serve import serve
from rearview.cli.target import RemoteTarget
from rearview.cli.write import import_jsonl, load_jsonl, remember

app = typer.Typer(
    name="rearview",
    help="Rearview: long-term memory for LLM agents, on this machine.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


@app.callback()
def main(
    ctx: typer.Context,
    url: Annotated[
        str | None,
        typer.Option(
            "--url",
            envvar="REARVIEW_URL",
            help="A Rearview server (http://host:port): every command that reads or writes memory (remember, "
            "import, recall, brief, feedback, forget, consolidate, stats, session, keys, ls, edit, history, "
            "sources, export, erase) goes there over HTTP instead of to the local data directory",
            show_default=False,
        ),
    ] = None,
    token: Annotated[
        str | None,
        typer.Option(
            "--token", envvar="REARVIEW_TOKEN", help="API key sent as Bearer credential with --url", show_default=False
        ),
    ] = None,
) -> None:
    """Rearview: long-term memory for LLM agents."""
    ctx.obj = RemoteTarget(url, token) if url else None


app.command("serve")(serve)
app.command("emulate")(emulate)
app.command("remember")(remember)
app.command("recall")(recall)
app.command("brief")(brief)
app.command("feedback")(feedback)
app.command("forget")(forget)
app.command("consolidate")(consolidate)
app.command("stats")(stats)
app.command("import")(import_jsonl)
app.command("load")(load_jsonl)
app.command("reindex")(reindex)
app.command("ls")(ls)
app.command("edit")(edit)
app.command("history")(history)
app.command("export")(export)
app.command("erase")(erase)
app.command("mcp")(mcp)
app.add_typer(session_app, name="session")
app.add_typer(keys_app, name="keys")
# The operations the catalogue offers on the command line with no command above: one each, made from its row.
add_operation_commands(app)

__all__ = ["app"]
