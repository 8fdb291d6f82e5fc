"""`make layer`: the Lambda layer's `python/` directory, from PyPI wheels for the functions' platform, without Docker.

What goes in is the library and what the functions import, nothing else:

1. The project's wheel with the extras the functions need (`LAYER_EXTRAS`), resolved once for the target platform
   into a lock (`<out>/requirements.lock`, `name==version` a line) less the distributions nothing imports
   (`EXCLUDED_DISTRIBUTIONS`, each with its reason).
2. The lock installed with `--no-deps` for the platform: `--lock` installs another platform from the same lock, so the
   x86_64 layer the tests run on this machine holds exactly the distributions, at exactly the versions, of the arm64
   one Lambda runs (`tests/infra/test_layer_handlers.py` compares them).
3. Pruned: the library's edges no function runs (`EXCLUDED_PACKAGES`: the command line and the emulator), console
   scripts, the distributions' own test suites and type stubs, and botocore's models of the services no function
   calls (`BOTOCORE_SERVICES` lists the ones kept; `tests/unit/test_layer_contents.py` checks that every client the
   library builds is among them).

    python infra/build_layer.py --out build/layer --platform manylinux2014_aarch64 --platform manylinux_2_28_aarch64
    python infra/build_layer.py --out build/layer-x86_64 --platform manylinux2014_x86_64 \
        --platform manylinux_2_28_x86_64 --lock build/layer/requirements.lock
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
PYTHON_VERSION = "3.13"
# The AWS adapters (boto3, opensearch-py, the X-Ray SDK Powertools' Tracer imports) and the MCP server.
LAYER_EXTRAS = "aws,mcp"
# Distributions a dependency declares but no function imports: opensearch-py 3 declares its gRPC transport
# (opensearch-protobufs, grpcio, protobuf: about 20 MB), which the HTTP client the adapter uses never loads.
EXCLUDED_DISTRIBUTIONS: frozenset[str] = frozenset({"grpcio", "opensearch-protobufs", "protobuf"})
# The library's packages no function runs: the command line and `rearview emulate` (the inspector's files stay:
# the recall function serves /ui).
EXCLUDED_PACKAGES: tuple[str, ...] = ("rearview/cli", "rearview/emulator")
# botocore's service models the functions use (the library's `boto3_client` calls, and STS for credentials); every
# other service's model (about 20 MB) goes.
BOTOCORE_SERVICES: frozenset[str] = frozenset(
    {"bedrock-agent-runtime", "bedrock-runtime", "dynamodb", "secretsmanager", "sqs", "sts"}
)


def _pip(*args: str) -> None:
    subprocess.run([sys.executable, "-m", "pip", *args], check=True)


def _platform_args(platforms: list[str]) -> list[str]:
    args = ["--implementation", "cp", "--python-version", PYTHON_VERSION, "--only-binary=:all:"]
    for platform in platforms:
        args += ["--platform", platform]
    return args


def project_wheel(wheel_dir: Path) -> Path:
    """The project's own wheel (pure Python, so one for every platform)."""
    shutil.rmtree(wheel_dir, ignore_errors=True)
    _pip("wheel", "--quiet", "--no-deps", "--wheel-dir", str(wheel_dir), str(REPO_ROOT))
    (wheel,) = wheel_dir.glob("rearview_memory-*.whl")
    return wheel


def resolve(wheel: Path, platforms: list[str]) -> list[str]:
    """`name==version` of every distribution the wheel's extras need on the platform, less the excluded ones."""
    with tempfile.TemporaryDirectory() as scratch:
        report = Path(scratch) / "report.json"
        _pip(
            "install", "--quiet", "--dry-run", "--ignore-installed", "--report", str(report),
            "--target", str(Path(scratch) / "target"), *_platform_args(platforms), f"{wheel}[{LAYER_EXTRAS}]",
        )  # fmt: skip
        installed = json.loads(report.read_text())["install"]
    pins = []
    for item in installed:
        name, version = item["metadata"]["name"], item["metadata"]["version"]
        if canonical(name) in EXCLUDED_DISTRIBUTIONS or canonical(name) == "rearview-memory":
            continue
        pins.append(f"{canonical(name)}=={version}")
    return sorted(pins)


def canonical(name: str) -> str:
    return name.lower().replace("_", "-").replace(".", "-")


def install(python_dir: Path, wheel: Path, lock: Path, platforms: list[str]) -> None:
    """The locked distributions and the project's wheel, without resolving anything again."""
    shutil.rmtree(python_dir.parent, ignore_errors=True)
    python_dir.mkdir(parents=True)
    _pip(
        "install", "--quiet", "--no-compile", "--no-deps", "--target", str(python_dir), *_platform_args(platforms),
        "-r", str(lock), str(wheel),
    )  # fmt: skip


def prune(python_dir: Path) -> None:
    """What no function imports: the library's edges, scripts, test suites, stubs, unused botocore models."""
    for relative in (*EXCLUDED_PACKAGES, "bin"):
        shutil.rmtree(python_dir / relative, ignore_errors=True)
    for found in sorted(python_dir.rglob("*"), reverse=True):
        if found.is_dir() and found.name == "tests" and found.parent != python_dir:
            shutil.rmtree(found)
        elif found.is_file() and found.suffix == ".pyi":
            found.unlink()
    models = python_dir / "botocore" / "data"
    for service in models.iterdir() if models.is_dir() else ():
        if service.is_dir() and service.name not in BOTOCORE_SERVICES:
            shutil.rmtree(service)


def size_bytes(directory: Path) -> int:
    return sum(p.stat().st_size for p in directory.rglob("*") if p.is_file() and not p.is_symlink())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, required=True, help="the layer directory (its python/ is what ships)")
    parser.add_argument(
        "--platform", action="append", required=True, help="pip --platform tags, e.g. manylinux2014_aarch64"
    )
    parser.add_argument("--lock", type=Path, help="install this lock instead of resolving one (another platform)")
    parser.add_argument(
        "--wheel", type=Path, help="the project's wheel, built already (by `pip wheel --no-deps .`): not built again"
    )
    args = parser.parse_args(argv)
    out: Path = args.out.resolve()
    with tempfile.TemporaryDirectory() as scratch:
        wheel = args.wheel.resolve() if args.wheel else project_wheel(Path(scratch) / "wheels")
        pins = args.lock.read_text().split() if args.lock else resolve(wheel, args.platform)
        lock = Path(scratch) / "requirements.lock"
        lock.write_text("\n".join(pins) + "\n")
        install(out / "python", wheel, lock, args.platform)
        shutil.copy(lock, out / "requirements.lock")
    prune(out / "python")
    print(f"{out / 'python'}: {size_bytes(out / 'python') / 1e6:.1f} MB unzipped, {len(pins)} distributions locked")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
