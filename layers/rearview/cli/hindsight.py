"""`rearview brief`, `rearview feedback` and `rearview session end`: what applies before a task, what a memory was
worth after it, and the end of a session (which fires the session-end consolidation trigger)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Annotated

import typer

from rearview.bootstrap import Services
from rearview.cli import render
from rearview.cli.invocation import (
    DataDirOption,
    EmbedderOption,
    JsonOption,
    print_result,
    user_errors,
)
from rearview.cli.request_options import VerdictChoice, described, request_from_options
from rearview.cli.target import run
from rearview.domain.brief import BriefRequest, FeedbackRequest
from rearview.domain.consolidate import ConsolidateResult
from rearview.domain.hindsight_runs import ConsolidationJob
from rearview.errors import RunInProgress
from rearview.service.hindsight.runner import ConsolidationRunner

session_app = typer.Typer(name="session", help="Sessions: end one (clears its working memory).", no_args_is_help=True)


@dataclass
class RunNow:
    """The consolidation jobs of a one-shot command, run at once in this process (there is no background worker
    to take them); a namespace another run holds is reported, not raised."""

    runner: ConsolidationRunner
    results: list[ConsolidateResult | RunInProgress] = field(default_factory=list)

    def send(self, job: ConsolidationJob) -> None:
        try:
            self.results.append(self.runner.run(job))
        except RunInProgress as exc:
            self.results.append(exc)


def brief(
    ctx: typer.Context,
    namespace: Annotated[str, typer.Argument(help="Namespace, e.g. acme:u-42")],
    task: Annotated[str, typer.Argument(help=described(BriefRequest, "task"))],
    tool: Annotated[str | None, typer.Option("--tool", help=described(BriefRequest, "tool"))] = None,
    entities: Annotated[
        list[str] | None, typer.Option("--entity", help=described(BriefRequest, "entities", "repeatable"))
    ] = None,
    session_id: Annotated[str | None, typer.Option("--session", help=described(BriefRequest, "session_id"))] = None,
    top_k: Annotated[int | None, typer.Option(help=described(BriefRequest, "top_k"))] = None,
    token_budget: Annotated[int | None, typer.Option(help=described(BriefRequest, "token_budget"))] = None,
    as_of: Annotated[str | None, typer.Option(help=described(BriefRequest, "as_of"))] = None,
    data_dir: DataDirOption = None,
    embedder: EmbedderOption = None,
    as_json: JsonOption = False,
) -> None:
    """The preferences and lessons that apply to TASK, best first, each with why."""
    with user_errors():
        request = request_from_options(BriefRequest, ctx)
    response = run(ctx, data_dir, embedder, "brief", namespace, request)
    print_result(response, as_json, render.brief_response)


def feedback(
    ctx: typer.Context,
    namespace: Annotated[str, typer.Argument(help="Namespace, e.g. acme:u-42")],
    memory_id: Annotated[str, typer.Argument(help=described(FeedbackRequest, "memory_id"))],
    verdict: Annotated[VerdictChoice, typer.Argument(help=described(FeedbackRequest, "verdict"))],
    correction: Annotated[str | None, typer.Option(help=described(FeedbackRequest, "correction"))] = None,
    data_dir: DataDirOption = None,
    embedder: EmbedderOption = None,
    as_json: JsonOption = False,
) -> None:
    """Say what memory MEMORY_ID was worth: useful, not_useful, or wrong (with --correction)."""
    with user_errors():
        request = request_from_options(FeedbackRequest, ctx)
    result = run(ctx, data_dir, embedder, "feedback", namespace, request)
    print_result(result, as_json, render.feedback_result)


@session_app.command("end")
def end_session(
    ctx: typer.Context,
    namespace: Annotated[str, typer.Argument(help="Namespace, e.g. acme:u-42")],
    session_id: Annotated[str, typer.Argument(help="The session to end")],
    data_dir: DataDirOption = None,
    embedder: EmbedderOption = None,
    as_json: JsonOption = False,
) -> None:
    """End session SESSION_ID: clear its working memory and fire the session-end consolidation trigger (a server
    runs the job in the background; on the local data directory it runs now)."""
    runs: list[RunNow] = []

    def run_jobs_now(services: Services) -> None:
        runs.append(RunNow(services.runner))
        services.consolidation.attach(runs[0])

    ended = run(ctx, data_dir, embedder, "end_session", namespace, session_id, on_local=run_jobs_now)
    print_result(ended, as_json, lambda e: render.session_ended(e, runs[0].results if runs else None))
