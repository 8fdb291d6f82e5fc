"""A baseline commit's code for the benchmarks that measure this tree against it in the same run."""

from __future__ import annotations

import subprocess
import tarfile
from io import BytesIO
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def extract_tree(ref: str, into: Path, *paths: str) -> Path:
    """`paths` (e.g. "layers", "functions") as they are at `ref`, extracted under `into` (`git archive`); returns
    `into`."""
    archive = subprocess.run(["git", "archive", ref, *paths], cwd=REPO, check=True, capture_output=True).stdout
    with tarfile.open(fileobj=BytesIO(archive)) as tar:
        tar.extractall(into, filter="data")
    return into


def extract_layers(ref: str, into: Path) -> Path:
    """The library of `ref` (its `layers` directory) extracted under `into`; returns the directory to put on
    PYTHONPATH."""
    return extract_tree(ref, into, "layers") / "layers"
