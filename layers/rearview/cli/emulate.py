"""`rearview emulate`: the AWS deployment's shape on this machine (rearview.emulator), with no account and no
Docker, serving the same HTTP API and `/mcp` as `rearview serve` on REARVIEW_PORT until Ctrl-C or SIGTERM."""

from __future__ import annotations

import json
import logging
import os
import signal
import threading
import time
from pathlib import Path
from typing import Annotated

import typer

from rearview.cli.invocation import fail, stderr_console, stdout_console, user_errors
from rearview.emulator.containers import LambdaRuntime
from rearview.emulator.emulator import Emulator, EmulatorOptions
from rearview.emulator.search import SearchMode
from rearview.emulator.timers import rate_seconds

DEFAULT_TEMPLATE = Path("build/emulate/Rearview.template.json")
DEFAULT_DATA_DIR = Path(".rearview-emulate")


TemplateOption = Annotated[
    Path,
    typer.Option(
        envvar="REARVIEW_EMULATE_TEMPLATE",
        help="The synthesised CloudFormation template (`make emulate` writes it)",
        dir_okay=False,
    ),
]
EmulateDataDirOption = Annotated[
    Path,
    typer.Option(envvar="REARVIEW_EMULATE_DATA_DIR", help="State, index, logs and the admin token", file_okay=False),
]
HostOption = Annotated[str, typer.Option(envvar="REARVIEW_HOST", help="Interface of the HTTP API")]
PortOption = Annotated[int, typer.Option(envvar="REARVIEW_PORT", help="Port of the HTTP API")]
MotoUrlOption = Annotated[
    str | None,
    typer.Option(envvar="REARVIEW_EMULATE_MOTO_URL", help="An external moto server; default: one in-process"),
]
MotoPortOption = Annotated[
    int, typer.Option(envvar="REARVIEW_EMULATE_MOTO_PORT", help="Port of the in-process moto (0: any free one)")
]
SearchOption = Annotated[
    str,
    typer.Option(envvar="REARVIEW_EMULATE_SEARCH", help="auto, opensearch (OPENSEARCH_URL, waited for) or embedded"),
]
ScheduleOption = Annotated[
    float | None,
    typer.Option(envvar="REARVIEW_EMULATE_SCHEDULE_SECONDS", help="The schedule's period instead of the rule's"),
]
TtlSweepOption = Annotated[
    float, typer.Option(envvar="REARVIEW_EMULATE_TTL_SWEEP_SECONDS", help="How often expired items are deleted")
]
RetryOption = Annotated[
    float | None,
    typer.Option(
        envvar="REARVIEW_EMULATE_RETRY_SECONDS",
        help="A failed SQS message is delivered again after this, not the queue's visibility timeout",
    ),
]

PythonOption = Annotated[
    Path | None,
    typer.Option(
        envvar="REARVIEW_EMULATE_PYTHON",
        help="Run each function on this interpreter (python3.13, as Lambda does) with only its code and --layer on "
        "its path; default: the emulator's own interpreter and packages",
        dir_okay=False,
    ),
]
LayerOption = Annotated[
    Path | None,
    typer.Option(
        envvar="REARVIEW_EMULATE_LAYER",
        help="The layer's python/ directory for --python (`make emulate` builds one for this machine's platform)",
        file_okay=False,
    ),
]
IamOption = Annotated[
    bool,
    typer.Option(
        "--iam/--no-iam",
        envvar="REARVIEW_EMULATE_IAM",
        help="Each function with its role's credentials, moto checking them (the in-process moto only)",
    ),
]


def emulate(
    template: TemplateOption = DEFAULT_TEMPLATE,
    data_dir: EmulateDataDirOption = DEFAULT_DATA_DIR,
    host: HostOption = "127.0.0.1",
    port: PortOption = 8765,
    moto_url: MotoUrlOption = None,
    moto_port: MotoPortOption = 0,
    search: SearchOption = "auto",
    schedule_seconds: ScheduleOption = None,
    ttl_sweep_seconds: TtlSweepOption = 60.0,
    retry_seconds: RetryOption = None,
    python: PythonOption = None,
    layer: LayerOption = None,
    iam: IamOption = True,
) -> None:
    """Emulate the AWS deployment (moto, the real Lambda handlers, OpenSearch or the embedded index) until
    interrupted."""
    if search not in ("auto", "opensearch", "embedded"):
        fail(f"search: expected auto, opensearch or embedded (got {search!r})")
    if (python is None) != (layer is None):
        fail("--python and --layer go together: the functions' interpreter and the layer on its path")
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    options = EmulatorOptions(
        template=template,
        data_dir=data_dir,
        host=host,
        port=port,
        moto_url=moto_url,
        moto_port=moto_port,
        search=_search_mode(search),
        opensearch_url=os.environ.get("OPENSEARCH_URL") or None,
        opensearch_engine=os.environ.get("OPENSEARCH_ENGINE") or "lucene",
        schedule_seconds=schedule_seconds,
        ttl_sweep_seconds=ttl_sweep_seconds,
        retry_seconds=retry_seconds,
        api_token=os.environ.get("REARVIEW_API_TOKEN") or None,
        overrides=EmulatorOptions.overrides_from(os.environ),
        runtime=LambdaRuntime(python, layer) if python is not None and layer is not None else None,
        enforce_iam=iam,
    )
    began = time.monotonic()
    with user_errors():
        emulator = Emulator(options)
    stopping = threading.Event()
    previous = signal.signal(signal.SIGTERM, lambda signum, frame: stopping.set())
    started = False
    try:
        with user_errors():
            try:
                emulator.start()
            except OSError as exc:
                fail(f"cannot start: {exc}")
        started = True
        _announce(emulator, time.monotonic() - began)
        _wait(stopping)
    finally:
        if started:
            stderr_console().print("Rearview emulator: shutting down", markup=False)
        saved = emulator.stop()
        signal.signal(signal.SIGTERM, previous)
    stderr_console().print(f"Rearview emulator: {_summary(emulator, saved)}", markup=False)


def _search_mode(value: str) -> SearchMode:
    return "opensearch" if value == "opensearch" else "embedded" if value == "embedded" else "auto"


def _wait(stopping: threading.Event) -> None:
    """Until SIGTERM (the event) or Ctrl-C."""
    try:
        while not stopping.wait(0.5):
            pass
    except KeyboardInterrupt:
        return


def _announce(emulator: Emulator, seconds: float) -> None:
    out = stdout_console()
    template, deployment = emulator.template, emulator.deployment
    assert deployment is not None and emulator.search is not None
    data = emulator.data_dir
    outputs = emulator.outputs()
    (data / "outputs.json").write_text(json.dumps(outputs | {"MotoUrl": emulator.moto_url}, indent=2) + "\n")
    names = ", ".join(c.name for c in emulator.containers.values())
    lines = [
        f"Rearview emulating the AWS deployment on {emulator.url}",
        f"  health:    {emulator.url}/v1/health    MCP: {emulator.url}/mcp",
        f"  template:  {template.path} (stack {template.stack_name})",
        f"  moto:      {emulator.moto_url} (DynamoDB + Streams, SQS, EventBridge; AWS_ENDPOINT_URL for the aws CLI)",
        f"  tables:    {', '.join(t.name for t in deployment.tables.values())}",
        f"  queues:    {', '.join(q.name for q in deployment.queues.values())}",
        f"  functions: {names} (logs in {data / 'logs'})",
        f"  {emulator.search.banner}",
        f"  schedule:  {_schedules(emulator)}; TTL swept every {emulator.options.ttl_sweep_seconds:g} s",
        f"  state:     {data} (restored {emulator.restored.get('items', 0)} items, "
        f"{emulator.restored.get('messages', 0)} messages); outputs in {data / 'outputs.json'}",
        f"  auth:      API keys, checked by the authorizer; admin token in {data / 'api-token'} "
        "(or REARVIEW_API_TOKEN)",
        f"  started in {seconds:.1f} s; Ctrl-C or SIGTERM stops it and saves the state",
    ]
    for line in lines:
        out.print(line, markup=False, soft_wrap=True)


def _schedules(emulator: Emulator) -> str:
    period = emulator.options.schedule_seconds
    found = [
        f"{s.expression} -> every {period or rate_seconds(s.expression):g} s" for s in emulator.template.schedules()
    ]
    return ", ".join(found) or "none"


def _summary(emulator: Emulator, saved: dict[str, int]) -> str:
    invocations = ", ".join(f"{c.name} {c.invocations}" for c in emulator.containers.values() if c.invocations)
    return (
        f"invocations: {invocations or 'none'}; saved {saved.get('items', 0)} items and "
        f"{saved.get('messages', 0)} messages to {emulator.state_dir}"
    )
