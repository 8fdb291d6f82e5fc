"""Where tests keep what a person should be able to look at afterwards (the browser tests' screenshots)."""

from __future__ import annotations

import os
from pathlib import Path

# REARVIEW_TEST_ARTIFACTS moves the folder; by default build/test-artifacts in the checkout (ignored by git).
ARTIFACTS = Path(
    os.environ.get("REARVIEW_TEST_ARTIFACTS") or Path(__file__).resolve().parents[2] / "build" / "test-artifacts"
)
WRITTEN: list[Path] = []


def artifact_dir(name: str) -> Path:
    """A folder for one test's artefacts (its old screenshots removed), listed in the run's summary."""
    folder = ARTIFACTS / name
    folder.mkdir(parents=True, exist_ok=True)
    for old in folder.glob("*.png"):
        old.unlink()
    if folder not in WRITTEN:
        WRITTEN.append(folder)
    return folder
