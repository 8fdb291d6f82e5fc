"""The emulator: the stack's template deployed onto moto, its functions in Lambda containers, and what drives
them (the HTTP API, the SQS and stream event sources, the schedule, the TTL sweeper), started and stopped in order.

Start: moto (in this process, or an external endpoint) -> the template's queues, table and rules -> the state
saved by the last run -> the index -> the function containers -> the event sources and timers -> the HTTP API.
Stop runs the other way, ending with the state written to the data directory.
"""

from __future__ import annotations

import logging
import os
import secrets
import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rearview import bootstrap
from rearview.emulator import fork_server, iam, snapshot
from rearview.emulator.containers import FunctionContainer, LambdaRuntime
from rearview.emulator.fork_server import ForkServer
from rearview.emulator.http_front import ApiGateway, GatewayServer
from rearview.emulator.resources import Deployment, deploy
from rearview.emulator.search import SearchChoice, SearchMode, choose_search
from rearview.emulator.sqs_poller import SqsPoller
from rearview.emulator.stream_poller import StreamPoller, TtlDeletes
from rearview.emulator.template import REGION, FunctionSpec, Template
from rearview.emulator.timers import ScheduleTicker, TtlSweeper
from rearview.settings import Settings

logger = logging.getLogger(__name__)

# How long a stop waits for a running invocation to end (then its process is ended), and for the event sources.
STOP_SECONDS = 10.0
POLLER_GRACE_SECONDS = 0.5
TOKEN_FILENAME = "api-token"
# The emulator's own variables, and the local server's, are not the functions' settings.
_NOT_FOR_FUNCTIONS = ("REARVIEW_EMULATE_", "REARVIEW_HOST", "REARVIEW_PORT", "REARVIEW_DATA_DIR", "REARVIEW_URL")
# What a function's process keeps of the emulator's environment (Lambda sets its own; these make Python work).
_PROCESS_VARIABLES = ("PATH", "HOME", "LANG", "LC_ALL", "TMPDIR", "TZ", "OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE")


@dataclass
class EmulatorOptions:
    """How to run the emulation; `rearview emulate` fills it from its options and REARVIEW_EMULATE_* variables."""

    template: Path
    data_dir: Path
    host: str = "127.0.0.1"
    port: int = 8765
    # An external moto server (compose); None: one in this process, on `moto_port` (0: any free port).
    moto_url: str | None = None
    moto_port: int = 0
    search: SearchMode = "auto"
    opensearch_url: str | None = None
    opensearch_engine: str = "lucene"
    # The schedule's period instead of the rule's (`rate(1 hour)`), the TTL sweeper's, and how soon a failed SQS
    # message is delivered again (None: after the queue's visibility timeout, as on AWS).
    schedule_seconds: float | None = None
    ttl_sweep_seconds: float = 60.0
    retry_seconds: float | None = None
    # The admin bearer token (REARVIEW_API_TOKEN); None: generated once and kept in the data directory.
    api_token: str | None = None
    # REARVIEW_* settings given to every function over the template's own (not the resources it names).
    overrides: dict[str, str] = field(default_factory=dict)
    # The functions' own Python with the layer (what Lambda runs); None: the emulator's interpreter and packages.
    runtime: LambdaRuntime | None = None
    # Each function with its role's credentials, checked by moto (in-process moto only; see `iam`).
    enforce_iam: bool = True

    @staticmethod
    def overrides_from(environment: Mapping[str, str]) -> dict[str, str]:
        return {
            k: v for k, v in environment.items() if k.startswith("REARVIEW_") and not k.startswith(_NOT_FOR_FUNCTIONS)
        }


class Emulator:
    """One emulated deployment; `start()`, then `stop()` (also on SIGTERM, by the command)."""

    def __init__(self, options: EmulatorOptions) -> None:
        self.options = options
        self.data_dir = options.data_dir.resolve()
        self.template = Template.load(options.template)
        self.search: SearchChoice | None = None
        self.deployment: Deployment | None = None
        self.containers: dict[str, FunctionContainer] = {}
        self.restored: dict[str, int] = {}
        self.moto_url = ""
        self.url = ""
        self.api_token = ""
        self._moto: Any = None
        self._clients: dict[str, Any] = {}
        self._pollers: list[Any] = []
        self._server: GatewayServer | None = None
        self._server_thread: threading.Thread | None = None
        self._forks = ForkServer() if fork_server.supported() and options.runtime is None else None
        self._stopped = False
        # What the emulator and each function call AWS with: "emulated" until the roles are made (iam.Principals).
        self.principals: iam.Principals | None = None

    # --- start ----------------------------------------------------------------------------------------------

    def start(self) -> None:
        (self.data_dir / "logs").mkdir(parents=True, exist_ok=True)
        self.api_token = self.options.api_token or self._stored_token()
        # The API's port first: a port in use fails the start before anything else is made.
        self._bind_front()
        self._start_moto()
        options = self.options
        self.search = choose_search(options.search, options.opensearch_url)
        endpoint = self.search.url or ""
        self.deployment = deploy(
            self.template, self._client("dynamodb"), self._client("sqs"), self._client("events"), endpoint
        )
        fresh = self.deployment.created
        if fresh:
            self.restored = snapshot.restore(
                self.deployment, self.state_dir, self._client("dynamodb"), self._client("sqs")
            )
        if options.enforce_iam and self._moto is not None:
            self.principals = iam.grant_roles(
                self.template, self.deployment.resolver(), self._client("iam"), self._client("sts")
            )
            self._clients.clear()  # the emulator's own calls carry its administrator's credentials from now
            iam.enforce(self.principals)
        if self._forks is not None:
            self._forks.start()
        functions = self.template.functions()
        environments = {lid: self.function_environment(spec) for lid, spec in functions.items()}
        self._prepare_index(next(iter(environments.values())))
        for logical_id, spec in functions.items():
            self.containers[logical_id] = FunctionContainer(
                spec, environments[logical_id], self.data_dir / "logs", self._forks, options.runtime
            )
        for container in self.containers.values():
            container.warm()
        self._start_event_sources(skip_stream_history=bool(self.restored.get("items")))
        self._start_front()

    @property
    def state_dir(self) -> Path:
        return self.data_dir / "state"

    def _stored_token(self) -> str:
        """The admin token kept in the data directory (made on the first run, readable by its owner only)."""
        path = self.data_dir / TOKEN_FILENAME
        if path.is_file():
            return path.read_text().strip()
        token = secrets.token_urlsafe(32)
        path.write_text(token + "\n")
        path.chmod(0o600)
        return token

    def _start_moto(self) -> None:
        if self.options.moto_url:
            self.moto_url = self.options.moto_url.rstrip("/")
            return
        from moto.server import ThreadedMotoServer

        logging.getLogger("werkzeug").setLevel(logging.WARNING)
        self._moto = ThreadedMotoServer(ip_address="127.0.0.1", port=self.options.moto_port, verbose=False)
        self._moto.start()
        host, port = self._moto.get_host_and_port()
        self.moto_url = f"http://{host}:{port}"

    def _client(self, service: str) -> Any:
        """A boto3 client of the emulated account (moto accepts any credentials)."""
        if service not in self._clients:
            import boto3

            credentials = self.principals.admin if self.principals else iam.Credentials("emulated", "emulated")
            self._clients[service] = boto3.client(
                service,  # type: ignore[call-overload]
                endpoint_url=self.moto_url,
                region_name=REGION,
                aws_access_key_id=credentials.access_key_id,
                aws_secret_access_key=credentials.secret_access_key,
            )
        return self._clients[service]

    def function_environment(self, spec: FunctionSpec) -> dict[str, str]:
        """What the function's process sees: Lambda's variables, the template's (resolved), the user's REARVIEW_*
        settings (not over the resources the template names), and where the emulated services are."""
        assert self.deployment is not None and self.search is not None
        resolver = self.deployment.resolver()
        template_env = {k: str(resolver.resolve(v)) for k, v in spec.environment.items()}
        wired = {k for k, v in spec.environment.items() if isinstance(v, dict)}
        name = self.deployment.function_name(spec.logical_id)
        env = {k: os.environ[k] for k in _PROCESS_VARIABLES if k in os.environ}
        env |= {
            "AWS_REGION": REGION,
            "AWS_DEFAULT_REGION": REGION,
            "AWS_ACCESS_KEY_ID": "emulated",
            "AWS_SECRET_ACCESS_KEY": "emulated",
            "AWS_ENDPOINT_URL": self.moto_url,
            "AWS_LAMBDA_FUNCTION_NAME": name,
            "AWS_LAMBDA_FUNCTION_MEMORY_SIZE": str(spec.memory_mb),
            "AWS_LAMBDA_FUNCTION_VERSION": "$LATEST",
            "AWS_LAMBDA_LOG_GROUP_NAME": f"/aws/lambda/{name}",
            "AWS_EXECUTION_ENV": "AWS_Lambda_python_emulated",
            "AWS_LAMBDA_INITIALIZATION_TYPE": "snap-start" if spec.snap_start else "on-demand",
            "LAMBDA_TASK_ROOT": str(spec.code_dir),
            # No X-Ray daemon here.
            "POWERTOOLS_TRACE_DISABLED": "true",
            "PYTHONUNBUFFERED": "1",
        }
        if self.principals is not None:
            env |= self.principals.functions[spec.logical_id].environment()
        env |= template_env
        env |= {k: v for k, v in self.options.overrides.items() if k not in wired}
        env["REARVIEW_API_TOKEN"] = self.api_token
        if env.get("REARVIEW_AWS__SEARCH") != "store":  # a deployment without a cluster searches the table
            env |= self._search_environment()
        return env

    def _search_environment(self) -> dict[str, str]:
        assert self.search is not None
        if self.search.kind == "embedded":
            return {"REARVIEW_AWS__SEARCH": "embedded", "REARVIEW_DATA_DIR": str(self.data_dir / "index")}
        return {
            "REARVIEW_AWS__SEARCH": "opensearch",
            "REARVIEW_AWS__OPENSEARCH_ENDPOINT": str(self.search.url),
            # Signed with the emulated credentials; a node without the security plugin ignores the signature.
            "REARVIEW_AWS__OPENSEARCH_SERVICE": "es",
            "REARVIEW_AWS__OPENSEARCH_ENGINE": self.options.opensearch_engine,
        }

    def _prepare_index(self, environment: dict[str, str]) -> None:
        """Create the index (as the stack's index custom resource would), once, before the functions search it: in
        a function's environment (its settings, and the credentials requests to OpenSearch are signed with)."""
        if environment.get("REARVIEW_AWS__SEARCH") == "store":
            return
        with function_environment(environment):
            settings = Settings()
            index = bootstrap.build_opensearch_index(settings, bootstrap.build_embedder(settings))
            maintenance = index.maintenance()
            if maintenance is not None:
                maintenance.ensure_index()
            close = getattr(index, "close", None)
            if callable(close):
                close()

    def _start_event_sources(self, *, skip_stream_history: bool) -> None:
        assert self.deployment is not None
        options, deployment, ttl_deletes = self.options, self.deployment, TtlDeletes()
        for source in self.template.event_sources():
            if source.source in deployment.queues:
                poller: Any = SqsPoller(
                    source, deployment.queues[source.source], self._client("sqs"), self.invoke,
                    retry_seconds=options.retry_seconds,
                )  # fmt: skip
            elif source.source in deployment.tables:
                poller = StreamPoller(
                    source, deployment.tables[source.source], deployment, self._client("dynamodbstreams"),
                    self.invoke, self._client("sqs"), ttl_deletes,
                )  # fmt: skip
                if skip_stream_history:
                    poller.skip_to_latest()
            else:
                logger.warning("event source %s: its source is not emulated", source.logical_id)
                continue
            self._pollers.append(poller)
        for schedule in self.template.schedules():
            self._pollers.append(
                ScheduleTicker(
                    schedule,
                    deployment,
                    self._client("events"),
                    self._client("sqs"),
                    self.invoke,
                    period=options.schedule_seconds,
                )  # fmt: skip
            )
        for table in deployment.tables.values():
            if table.ttl_attribute:
                self._pollers.append(
                    TtlSweeper(table, self._client("dynamodb"), ttl_deletes, options.ttl_sweep_seconds)
                )
        for poller in self._pollers:
            poller.start()

    def _bind_front(self) -> None:
        gateway = ApiGateway(self.template.routes(), self.template.authorizers(), self.invoke)
        self._server = GatewayServer((self.options.host, self.options.port), gateway)
        host, port = str(self._server.server_address[0]), int(self._server.server_address[1])
        shown = "127.0.0.1" if host in ("0.0.0.0", "::") else host
        self.url = f"http://{shown}:{port}"

    def _start_front(self) -> None:
        assert self._server is not None
        self._server_thread = threading.Thread(target=self._server.serve_forever, name="http-api", daemon=True)
        self._server_thread.start()

    def invoke(self, function: str, event: dict[str, Any], timeout: float | None = None) -> Any:
        """Invoke a function by logical id (the HTTP API, the event sources and the timers call this)."""
        return self.containers[function].invoke(event, timeout_seconds=timeout)

    # --- stop -----------------------------------------------------------------------------------------------

    def stop(self) -> dict[str, int]:
        """Stop taking requests, stop the event sources, end the containers, save the state; the saved counts
        (once: a second call does nothing)."""
        if self._stopped:
            return {}
        self._stopped = True
        self._stop_front()
        self._stop_running()
        saved: dict[str, int] = {}
        if self.deployment is not None:
            try:
                saved = snapshot.save(self.deployment, self.state_dir, self._client("dynamodb"), self._client("sqs"))
            except Exception:
                logger.exception("saving the emulated state failed; the previous snapshot is kept")
        if self._moto is not None:
            self._moto.stop()
        if self.principals is not None:
            iam.release()
        return saved

    def _stop_front(self) -> None:
        if self._server is None:
            return
        if self._server_thread is not None:  # shutdown() waits for serve_forever, which a failed start never ran
            self._server.shutdown()
        self._server.server_close()

    def _stop_running(self) -> None:
        """The event sources, the containers and the fork server."""
        for poller in self._pollers:
            poller.request_stop()
        # Most end at once; one waiting on an invocation (a cold start, a run) must not hold up the others.
        for poller in self._pollers:
            poller.stop(POLLER_GRACE_SECONDS)
        for container in self.containers.values():
            container.close_when_idle(STOP_SECONDS)
        for poller in self._pollers:
            poller.stop(STOP_SECONDS)
        if self._forks is not None:
            self._forks.stop()

    # --- what it runs -----------------------------------------------------------------------------------------

    def outputs(self) -> dict[str, str]:
        """The stack's outputs, resolved against the emulated resources (the API's URL is the front's)."""
        assert self.deployment is not None
        resolver = self.deployment.resolver()
        found = {}
        for name, output in self.template.body.get("Outputs", {}).items():
            found[name] = str(resolver.resolve(output.get("Value")))
        if "ApiUrl" in found:
            found["ApiUrl"] = self.url + "/"
        if "McpUrl" in found:
            found["McpUrl"] = self.url + "/mcp"
        if self.principals is not None:
            # moto checks every call against IAM: an operator's calls (a DLQ read) need these.
            found["EmulatorAccessKeyId"] = self.principals.admin.access_key_id
            found["EmulatorSecretAccessKey"] = self.principals.admin.secret_access_key
        return found


@contextmanager
def function_environment(environment: Mapping[str, str]) -> Iterator[None]:
    """The process's environment swapped for a function's, briefly (at start-up, before the event sources run):
    pydantic-settings and botocore read nothing else."""
    saved = dict(os.environ)
    os.environ.clear()
    os.environ.update(environment)
    try:
        yield
    finally:
        os.environ.clear()
        os.environ.update(saved)
