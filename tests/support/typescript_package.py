"""clients/typescript as the tests use it: its locked packages installed (`npm ci`, again when the lock is newer
than the install), with the directory held by one test at a time. Two test files use it (the client's own tests,
which build `dist/`, and `npm pack`, whose `prepack` builds it too): run at once by two xdist workers, their `npm ci`
removed each other's files (ENOTEMPTY). Skips, saying why, where node or npm is missing."""

from __future__ import annotations

import fcntl
import hashlib
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "clients" / "typescript"
# Bound on `npm ci` (an install from the registry); not a timing assertion.
INSTALL_TIMEOUT_SECONDS = 600


def npm() -> str:
    """The npm to run; skips the test where node or npm is missing."""
    found = shutil.which("npm")
    if found is None or shutil.which("node") is None:
        pytest.skip("TypeScript client: node and npm are needed (Node 20+)")
    return found


@contextmanager
def installed_package() -> Iterator[Path]:
    """The package directory with its locked packages installed, held by this test alone until the block ends (a
    lock file beside the system's temporary files, named for the checkout, so other checkouts run at once)."""
    command = npm()
    tag = hashlib.sha256(str(PACKAGE).encode()).hexdigest()[:16]
    with open(Path(tempfile.gettempdir()) / f"rearview-typescript-{tag}.lock", "w") as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        lock = PACKAGE / "package-lock.json"
        installed = PACKAGE / "node_modules" / ".package-lock.json"
        if not installed.exists() or installed.stat().st_mtime < lock.stat().st_mtime:
            done = subprocess.run(
                [command, "ci", "--no-audit", "--no-fund"],
                cwd=PACKAGE,
                capture_output=True,
                text=True,
                timeout=INSTALL_TIMEOUT_SECONDS,
            )
            assert done.returncode == 0, f"npm ci: {done.stdout[-4000:]}\n{done.stderr[-4000:]}"
        yield PACKAGE
