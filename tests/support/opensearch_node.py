"""A real OpenSearch node for the tests, assembled from Maven Central: no tarball, no Docker.

OpenSearch ships as a tarball that no package registry holds, but its server, its modules and the k-NN plugin
are Maven artifacts. `assemble` lays out a home from them once (cached under `~/.cache/rearview/opensearch`,
or `$REARVIEW_OPENSEARCH_CACHE`): `lib/` (the server and its dependencies), `modules/` (HTTP and transport on
netty4, painless, the common analyzers, reindex for `_delete_by_query`), each with the descriptor and security
policy the build would have written, and `plugins/opensearch-knn` (its zip, as published). `start` runs it on
this machine's Java as a single node bound to 127.0.0.1 on free ports, security off (the security plugin is not
there), with a small heap and its config, data and logs in a fresh directory; `stop` ends it and removes them.

The k-NN plugin's faiss and nmslib engines need native libraries that Maven does not carry; the Lucene engine
is pure Java, so the index is created with `engine="lucene"` on this node (see `OpenSearchIndex`).

Anything that keeps the node from starting (no java or mvn, Maven Central slow or refusing, a start that fails
or times out) raises `NodeUnavailable` with the reason, which the fixtures turn into a skip.

From the command line (`make opensearch`): `python tests/support/opensearch_node.py start` assembles, starts
a node in the background and prints its URL and the command that stops it; `... stop` stops it.
"""

from __future__ import annotations

import ctypes
import fcntl
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

OPENSEARCH_VERSION = "2.19.1"
# The newest k-NN plugin Maven Central holds for 2.19; a plugin starts only on the server version it names.
KNN_VERSION = "2.19.1.0"
# The log4j-core that matches the server's log4j-api (the server's pom leaves log4j-core out).
LOG4J_VERSION = "2.21.0"
DEFAULT_CACHE = Path("~/.cache/rearview/opensearch")
# Downloading the artifacts (about 70 MB the first time): past this, the tests skip rather than wait.
ASSEMBLE_TIMEOUT_SECONDS = 600.0
# Starting the node and waiting for a yellow cluster.
START_TIMEOUT_SECONDS = 120.0
HEAP = "512m"
# prctl(2): the signal a child gets when its parent dies.
PR_SET_PDEATHSIG = 1

# What each directory of the home holds: Maven coordinates (group:artifact:version[:type]); their runtime
# dependencies come along, less the jars that lib/ already has (a jar twice on a class path is refused).
COMPONENTS: dict[str, tuple[str, ...]] = {
    "lib": (
        f"org.opensearch:opensearch:{OPENSEARCH_VERSION}",
        # The class loader of plugins that extend others (k-NN extends painless); the server's pom leaves it out.
        f"org.opensearch:opensearch-plugin-classloader:{OPENSEARCH_VERSION}",
        f"org.apache.logging.log4j:log4j-core:{LOG4J_VERSION}",
    ),
    "modules/transport-netty4": (f"org.opensearch.plugin:transport-netty4-client:{OPENSEARCH_VERSION}",),
    "modules/lang-painless": (f"org.opensearch.plugin:lang-painless:{OPENSEARCH_VERSION}",),
    "modules/analysis-common": (f"org.opensearch.plugin:analysis-common:{OPENSEARCH_VERSION}",),
    "modules/reindex": (f"org.opensearch.plugin:reindex-client:{OPENSEARCH_VERSION}",),
    "plugins/opensearch-knn": (f"org.opensearch.plugin:opensearch-knn:{KNN_VERSION}:zip",),
}


@dataclass(frozen=True)
class Module:
    """What the build writes beside a module's jars: its plugin class and its security policy."""

    classname: str
    policy: str = ""
    extended: str = ""


MODULES: dict[str, Module] = {
    "transport-netty4": Module(
        "org.opensearch.transport.Netty4Plugin",
        'permission java.io.FilePermission "/proc/sys/net/core/somaxconn", "read";\n'
        'permission java.net.SocketPermission "*", "accept,connect";\n'
        'permission java.lang.RuntimePermission "*", "setContextClassLoader";\n'
        'permission java.lang.RuntimePermission "getClassLoader";\n'
        'permission java.util.PropertyPermission "sun.nio.ch.bugLevel", "write";\n',
    ),
    "lang-painless": Module(
        "org.opensearch.painless.PainlessPlugin",
        'permission java.lang.RuntimePermission "createClassLoader";\n'
        'permission java.lang.RuntimePermission "getClassLoader";\n',
    ),
    "analysis-common": Module("org.opensearch.analysis.common.CommonAnalysisPlugin"),
    "reindex": Module(
        "org.opensearch.index.reindex.ReindexPlugin",
        # Reindex from a remote cluster; this node never does, but the module asks for it at start.
        'permission java.net.SocketPermission "*", "connect";\n',
    ),
}

# The JVM options the distribution's launcher adds (SystemJvmOptions and jvm.options), heap and paths aside.
JVM_OPTIONS = (
    "-XX:+UseG1GC",
    # The client JIT only: a test node lives minutes, and C2 compiling on a 2-core machine costs more start-up
    # (and CPU beside the tests) than its faster code gives back. See bench/RESULTS.md.
    "-XX:TieredStopAtLevel=1",
    "-Xss1m",
    "-Djava.awt.headless=true",
    "-Dfile.encoding=UTF-8",
    "-Djna.nosys=true",
    # No JNA: OpenSearch refuses to start as root when JNA can tell it is root, and the tests may run as root
    # (CI does). Without JNA it skips the check, memory locking and the system call filter, none of which a
    # test node on 127.0.0.1 needs; the Lucene k-NN engine does not use it either (faiss's CPU probe does).
    "-Djna.nounpack=true",
    "-Djna.boot.library.path=/nonexistent",
    "-XX:-OmitStackTraceInFastThrow",
    "-Dio.netty.noUnsafe=true",
    "-Dio.netty.noKeySetOptimization=true",
    "-Dio.netty.recycler.maxCapacityPerThread=0",
    "-Dio.netty.allocator.numDirectArenas=0",
    "-Dlog4j.shutdownHookEnabled=false",
    "-Dlog4j2.disable.jmx=true",
    "-Djava.locale.providers=SPI,COMPAT",
    "-Djava.security.manager=allow",
    "-Dopensearch.distribution.type=tar",
    "-Dopensearch.bundled_jdk=false",
)

LOG4J2_PROPERTIES = """\
status = error
appender.console.type = Console
appender.console.name = console
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = [%d{ISO8601}][%-5p][%-25c{1.}] [%node_name]%marker %m%n
rootLogger.level = info
rootLogger.appenderRef.console.ref = console
logger.deprecation.name = org.opensearch.deprecation
logger.deprecation.level = error
"""


class NodeUnavailable(RuntimeError):
    """The node could not be assembled or started; the message says where and why."""


@dataclass(frozen=True)
class OpenSearchCluster:
    """A cluster the tests run against: where it is, how requests to it are signed (None: unsigned; `aoss`/`es`:
    SigV4 with the default AWS credentials) and the k-NN engine of the indices they create on it."""

    url: str
    signed_as: Literal["aoss", "es"] | None = None
    region: str | None = None
    engine: Literal["faiss", "lucene"] = "lucene"

    @classmethod
    def from_environment(cls) -> OpenSearchCluster | None:
        """The cluster named by OPENSEARCH_URL (with OPENSEARCH_SERVICE, AWS_REGION, OPENSEARCH_ENGINE), if any."""
        url = os.environ.get("OPENSEARCH_URL")
        if not url:
            return None
        service = os.environ.get("OPENSEARCH_SERVICE") or None
        if service not in (None, "aoss", "es"):
            raise ValueError(f"OPENSEARCH_SERVICE must be aoss or es, not {service!r}")
        engine = os.environ.get("OPENSEARCH_ENGINE") or "faiss"
        if engine not in ("faiss", "lucene"):
            raise ValueError(f"OPENSEARCH_ENGINE must be faiss or lucene, not {engine!r}")
        return cls(url, service, os.environ.get("AWS_REGION"), engine)  # type: ignore[arg-type]


def cache_dir() -> Path:
    """Where the assembled homes (one per version) and the background node's files live."""
    return Path(os.environ.get("REARVIEW_OPENSEARCH_CACHE") or DEFAULT_CACHE).expanduser()


# --- assembling the home ------------------------------------------------------------------------------------


def assemble(cache: Path | None = None, *, timeout: float = ASSEMBLE_TIMEOUT_SECONDS) -> Path:
    """The home of an OpenSearch node with k-NN, assembled from Maven Central on first use; its path."""
    home = (cache or cache_dir()) / _home_name()
    if (home / ".assembled").exists():
        return home
    mvn = _tool("mvn")
    _tool("java")
    home.parent.mkdir(parents=True, exist_ok=True)
    # One assembly at a time (two test sessions may start together); the second finds the first's home.
    with open(home.parent / ".assemble.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (home / ".assembled").exists():
            _download_and_lay_out(mvn, home, timeout)
    return home


def _download_and_lay_out(mvn: str, home: Path, timeout: float) -> None:
    build = home.parent / f".build-{home.name}"
    shutil.rmtree(build, ignore_errors=True)
    shutil.rmtree(home, ignore_errors=True)
    _write_reactor(build)
    command = [mvn, "-B", "-q", "-f", str(build / "pom.xml"), "package", *_maven_network_options()]
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=timeout, check=False)
    except subprocess.TimeoutExpired as exc:
        raise NodeUnavailable(f"downloading OpenSearch from Maven Central took over {timeout:.0f} s") from exc
    if done.returncode != 0:
        tail = "\n".join((done.stdout + done.stderr).strip().splitlines()[-15:])
        raise NodeUnavailable(f"mvn could not fetch the OpenSearch artifacts (exit {done.returncode}):\n{tail}")
    _lay_out(build, home)
    (home / ".assembled").write_text(json.dumps({"opensearch": OPENSEARCH_VERSION, "knn": KNN_VERSION}))
    shutil.rmtree(build, ignore_errors=True)


def _home_name() -> str:
    return f"opensearch-{OPENSEARCH_VERSION}-knn-{KNN_VERSION}"


def _tool(name: str) -> str:
    found = shutil.which(name)
    if found is None:
        raise NodeUnavailable(f"no `{name}` on PATH: the OpenSearch node needs Java 17+ and Maven")
    return found


def _maven_network_options() -> list[str]:
    """Give up on a stalled connection instead of hanging (milliseconds), and retry a failed one twice."""
    return [
        "-Dmaven.wagon.rto=60000",
        "-Dmaven.wagon.http.retryHandler.count=2",
        "-Daether.connector.requestTimeout=60000",
    ]


def _write_reactor(build: Path) -> None:
    """One Maven project per home directory, each copying its dependencies to `out/`, in one reactor."""
    names = []
    for index, (target, artifacts) in enumerate(COMPONENTS.items()):
        name = f"c{index}"
        names.append(name)
        (build / name).mkdir(parents=True)
        (build / name / "target.txt").write_text(target)
        (build / name / "pom.xml").write_text(_component_pom(name, artifacts))
    modules = "".join(f"<module>{name}</module>" for name in names)
    (build / "pom.xml").write_text(_pom("reactor", f"<modules>{modules}</modules>"))


def _component_pom(name: str, artifacts: tuple[str, ...]) -> str:
    dependencies = []
    for coordinates in artifacts:
        group, artifact, version, *kind = coordinates.split(":")
        kind_tag = f"<type>{kind[0]}</type>" if kind else ""
        dependencies.append(
            f"<dependency><groupId>{group}</groupId><artifactId>{artifact}</artifactId>"
            f"<version>{version}</version>{kind_tag}</dependency>"
        )
    copy = (
        "<build><plugins><plugin><groupId>org.apache.maven.plugins</groupId>"
        "<artifactId>maven-dependency-plugin</artifactId><version>3.6.1</version><executions><execution>"
        "<phase>package</phase><goals><goal>copy-dependencies</goal></goals><configuration>"
        "<outputDirectory>${project.basedir}/out</outputDirectory><includeScope>runtime</includeScope>"
        "</configuration></execution></executions></plugin></plugins></build>"
    )
    return _pom(name, f"<dependencies>{''.join(dependencies)}</dependencies>{copy}")


def _pom(artifact: str, body: str) -> str:
    return (
        '<project xmlns="http://maven.apache.org/POM/4.0.0"><modelVersion>4.0.0</modelVersion>'
        f"<groupId>local.rearview.opensearch</groupId><artifactId>{artifact}</artifactId><version>1</version>"
        f"<packaging>pom</packaging>{body}</project>"
    )


def _lay_out(build: Path, home: Path) -> None:
    """Copy each component's jars to its directory of the home, write the modules' descriptors, unzip k-NN."""
    staging = home.with_name(home.name + ".partial")
    shutil.rmtree(staging, ignore_errors=True)
    outputs = {(d / "target.txt").read_text(): d / "out" for d in sorted(build.iterdir()) if d.is_dir()}
    lib = staging / "lib"
    lib.mkdir(parents=True)
    for jar in outputs["lib"].glob("*.jar"):
        shutil.copy2(jar, lib / jar.name)
    in_lib = {jar.name for jar in lib.iterdir()}
    for target, out in outputs.items():
        if target.startswith("modules/"):
            folder = staging / target
            folder.mkdir(parents=True)
            for jar in out.glob("*.jar"):
                if jar.name not in in_lib:
                    shutil.copy2(jar, folder / jar.name)
            _write_descriptor(folder, MODULES[folder.name])
        elif target.startswith("plugins/"):
            (zipped,) = out.glob("*.zip")
            with zipfile.ZipFile(zipped) as archive:
                archive.extractall(staging / target)
    staging.rename(home)


def _write_descriptor(folder: Path, module: Module) -> None:
    lines = {
        "description": f"the {folder.name} module",
        "version": OPENSEARCH_VERSION,
        "name": folder.name,
        "classname": module.classname,
        "java.version": "11",
        "opensearch.version": OPENSEARCH_VERSION,
        "extended.plugins": module.extended,
        "has.native.controller": "false",
    }
    (folder / "plugin-descriptor.properties").write_text("".join(f"{k}={v}\n" for k, v in lines.items()))
    if module.policy:
        (folder / "plugin-security.policy").write_text(f"grant {{\n{module.policy}}};\n")


# --- running a node -----------------------------------------------------------------------------------------


@dataclass
class OpenSearchNode:
    """A running node: its URL, its process and the directory of its config, data and logs."""

    url: str
    process: subprocess.Popen[bytes]
    run_dir: Path
    started_in_seconds: float

    @property
    def log(self) -> Path:
        return self.run_dir / "node.log"

    def stop(self, timeout: float = 30.0) -> None:
        """End the node (SIGTERM, then SIGKILL past `timeout`) and remove its directory."""
        _end(self.process.pid, self.process.wait, timeout)
        shutil.rmtree(self.run_dir, ignore_errors=True)


def start(
    home: Path | None = None, *, heap: str = HEAP, timeout: float = START_TIMEOUT_SECONDS, detach: bool = False
) -> OpenSearchNode:
    """Start a single node from `home` (assembled on first use) and wait until its cluster is yellow."""
    home = home or assemble()
    java = _tool("java")
    run_dir = Path(tempfile.mkdtemp(prefix="rearview-opensearch-"))
    http_port, transport_port = _free_port(), _free_port()
    config = _write_config(run_dir, http_port, transport_port)
    command = [
        java,
        f"-Xms{heap}",
        f"-Xmx{heap}",
        *JVM_OPTIONS,
        f"-Djava.io.tmpdir={run_dir / 'tmp'}",
        f"-Dopensearch.path.home={home}",
        f"-Dopensearch.path.conf={config}",
        "-cp",
        f"{home / 'lib'}/*",
        "org.opensearch.bootstrap.OpenSearch",
    ]
    began = time.monotonic()
    with open(run_dir / "node.log", "wb") as log:
        process = subprocess.Popen(
            command,
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=detach,
            preexec_fn=None if detach else _end_with_parent,
        )
    node = OpenSearchNode(f"http://127.0.0.1:{http_port}", process, run_dir, 0.0)
    try:
        _wait_until_ready(node, timeout)
        _one_copy_of_each_index(node.url)
    except BaseException as exc:
        tail = _log_tail(node.log)
        node.stop()
        raise NodeUnavailable(f"the OpenSearch node did not start ({exc}); the end of its log:\n{tail}") from None
    node.started_in_seconds = time.monotonic() - began
    return node


def _one_copy_of_each_index(url: str) -> None:
    """A single node never places a replica: indices made without one are green, and made faster."""
    body = {"index_patterns": ["*"], "priority": 0, "template": {"settings": {"index.number_of_replicas": 0}}}
    request = urllib.request.Request(
        f"{url}/_index_template/rearview-test-node",
        data=json.dumps(body).encode(),
        method="PUT",
        headers={"Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=30) as response:
        response.read()


def _end_with_parent() -> None:
    """In the child before exec: Linux sends it SIGTERM when the test process dies, however it dies (a killed
    CI run must not leave a JVM behind)."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGTERM)
    except (OSError, AttributeError):
        pass


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _write_config(run_dir: Path, http_port: int, transport_port: int) -> Path:
    config = run_dir / "config"
    for sub in ("config", "data", "logs", "tmp"):
        (run_dir / sub).mkdir()
    settings = {
        "cluster.name": "rearview-test",
        "node.name": "rearview-test",
        "path.data": str(run_dir / "data"),
        "path.logs": str(run_dir / "logs"),
        "network.host": "127.0.0.1",
        "http.port": http_port,
        "transport.port": transport_port,
        "discovery.type": "single-node",
        # A nearly full disk must not make the test indices read-only.
        "cluster.routing.allocation.disk.threshold_enabled": False,
        "action.destructive_requires_name": False,
    }
    (config / "opensearch.yml").write_text("".join(f"{k}: {json.dumps(v)}\n" for k, v in settings.items()))
    (config / "log4j2.properties").write_text(LOG4J2_PROPERTIES)
    return config


def _wait_until_ready(node: OpenSearchNode, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    health = f"{node.url}/_cluster/health?wait_for_status=yellow&timeout=5s"
    while True:
        if node.process.poll() is not None:
            raise NodeUnavailable(f"exited with {node.process.returncode}")
        try:
            with urllib.request.urlopen(health, timeout=10) as response:
                if json.load(response).get("status") in ("yellow", "green"):
                    return
        except (OSError, urllib.error.URLError, ValueError):
            pass
        if time.monotonic() > deadline:
            raise NodeUnavailable(f"not ready within {timeout:.0f} s")
        time.sleep(0.5)


def _log_tail(log: Path, lines: int = 25) -> str:
    try:
        text = log.read_text(errors="replace")
    except OSError:
        return "(no log)"
    # The first error is the useful part; stack frames after it are noise.
    kept = [line for line in text.splitlines() if not line.startswith("\tat ")]
    return "\n".join(kept[-lines:])


def _end(pid: int, wait: object, timeout: float) -> None:
    try:
        os.kill(pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not _alive(pid, wait):
            return
        time.sleep(0.2)
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        return
    _alive(pid, wait)


def _alive(pid: int, wait: object) -> bool:
    if callable(wait):
        try:
            wait(timeout=0)
            return False
        except subprocess.TimeoutExpired:
            return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


# --- one node for the workers of a test run -----------------------------------------------------------------

SHARED_STATE = "opensearch-node.json"
# Ends the node once the run's controller has ended, however it ended (a killed CI run leaves no JVM behind).
_WATCHDOG = """
import os, signal, sys, time
owner, node = map(int, sys.argv[1:])
def alive(pid):
    try:
        os.kill(pid, 0)
        return True
    except ProcessLookupError:
        return False
while alive(owner) and alive(node):
    time.sleep(1)
if alive(node):
    os.kill(node, signal.SIGTERM)
"""


def shared(directory: Path, *, owner_pid: int) -> str:
    """The URL of the one node the processes sharing `directory` use (a test run's xdist workers): the first to ask
    starts it, outliving itself, and the others read it from `directory`. `end_shared(directory)` ends it, and so
    does the end of `owner_pid` (the run's controller). A start that failed is kept too: every worker raises
    `NodeUnavailable` with its reason, the node tried once."""
    state_path = directory / SHARED_STATE
    with open(directory / "opensearch-node.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not state_path.exists():
            try:
                node = start(detach=True)
            except NodeUnavailable as exc:
                state_path.write_text(json.dumps({"error": str(exc)}))
            else:
                watchdog = [sys.executable, "-c", _WATCHDOG, str(owner_pid), str(node.process.pid)]
                subprocess.Popen(watchdog, start_new_session=True, stdin=subprocess.DEVNULL)
                record(node, state_path)
        state = json.loads(state_path.read_text())
    if "error" in state:
        raise NodeUnavailable(state["error"])
    return str(state["url"])


def end_shared(directory: Path) -> None:
    """End the node `shared` started for `directory`, if it did."""
    end_recorded(directory / SHARED_STATE)


def record(node: OpenSearchNode, state_path: Path) -> None:
    """Write where a detached node is (its URL, pid and directory) for `end_recorded` and other processes."""
    state_path.write_text(json.dumps({"pid": node.process.pid, "url": node.url, "run_dir": str(node.run_dir)}))


def end_recorded(state_path: Path) -> dict[str, Any] | None:
    """End the node `record` wrote to `state_path` (if it is still that node), remove its directory and the record;
    the record, or None where there was none."""
    try:
        state: dict[str, Any] = json.loads(state_path.read_text())
    except (OSError, ValueError):
        return None
    if "pid" in state and _is_opensearch(int(state["pid"])):
        _end(int(state["pid"]), None, 30.0)
    if "run_dir" in state:
        shutil.rmtree(state["run_dir"], ignore_errors=True)
    state_path.unlink(missing_ok=True)
    return state


# --- the command line (`make opensearch`) -------------------------------------------------------------------


def _is_opensearch(pid: int) -> bool:
    """Whether `pid` is still an OpenSearch node (a pid left in the state file may have been reused since)."""
    try:
        return b"org.opensearch.bootstrap.OpenSearch" in Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return False


def _state_file() -> Path:
    return cache_dir() / "background-node.json"


def main(argv: list[str]) -> int:
    action = argv[1] if len(argv) > 1 else "start"
    if action == "stop":
        return _stop_background()
    if action != "start":
        print(f"usage: {argv[0]} start|stop", file=sys.stderr)
        return 2
    _stop_background(quiet=True)
    try:
        began = time.monotonic()
        cached = (cache_dir() / _home_name() / ".assembled").exists()
        home = assemble()
        assembled = "cached" if cached else f"assembled in {time.monotonic() - began:.1f} s"
        node = start(home, detach=True)
    except NodeUnavailable as exc:
        print(f"OpenSearch node unavailable: {exc}", file=sys.stderr)
        return 1
    record(node, _state_file())
    print(f"OpenSearch {OPENSEARCH_VERSION} with k-NN {KNN_VERSION} (lucene engine), single node, security off")
    print(f"  home {home} ({assembled}), started in {node.started_in_seconds:.1f} s")
    print(f"  log  {node.log}")
    print(f"OPENSEARCH_URL={node.url}")
    print(f"stop it with: make opensearch-stop (or kill {node.process.pid})")
    return 0


def _stop_background(*, quiet: bool = False) -> int:
    state = end_recorded(_state_file())
    if state is None:
        if not quiet:
            print("no OpenSearch node started by `make opensearch` is running")
        return 0
    if not quiet:
        print(f"stopped the OpenSearch node at {state['url']} (pid {state['pid']})")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
