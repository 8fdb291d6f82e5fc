"""The TypeScript client's own tests (`npm test` in clients/typescript: node's test runner against a `rearview serve`
the test starts), run from the suite so `make test` covers them. npm installs the locked packages first. Skips,
saying why, where node or npm is missing."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.integration, pytest.mark.slow]

PACKAGE = Path(__file__).resolve().parents[2] / "clients" / "typescript"
# Bounds on npm (a clean install from the registry) and on the tests themselves; not timing assertions.
INSTALL_TIMEOUT_SECONDS = 600
TEST_TIMEOUT_SECONDS = 300


def _npm() -> str:
    npm = shutil.which("npm")
    if npm is None or shutil.which("node") is None:
        pytest.skip("TypeScript client: node and npm are needed (Node 20+)")
    return npm


def test_the_typescript_client_passes_its_tests_against_a_live_server() -> None:
    npm = _npm()
    lock = PACKAGE / "package-lock.json"
    installed = PACKAGE / "node_modules" / ".package-lock.json"
    if not installed.exists() or installed.stat().st_mtime < lock.stat().st_mtime:
        subprocess.run([npm, "ci", "--no-audit", "--no-fund"], cwd=PACKAGE, check=True, timeout=INSTALL_TIMEOUT_SECONDS)
    env = {k: v for k, v in os.environ.items() if not k.startswith("REARVIEW_")}
    env["REARVIEW_BIN"] = str(Path(sys.executable).with_name("rearview"))
    run = subprocess.run(
        [npm, "test"], cwd=PACKAGE, env=env, capture_output=True, text=True, timeout=TEST_TIMEOUT_SECONDS
    )
    assert run.returncode == 0, run.stdout[-6000:] + run.stderr[-3000:]
    assert "# fail 0" in run.stdout and "# pass 3" in run.stdout, run.stdout[-3000:]
