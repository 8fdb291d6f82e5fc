"""The TypeScript client's own tests (`npm test` in clients/typescript: node's test runner against a `rearview serve`
the test starts), run from the suite so `make test` covers them. npm installs the locked packages first, one test
in the directory at a time (support/typescript_package). Skips, saying why, where node or npm is missing."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from support import typescript_package

pytestmark = [pytest.mark.integration, pytest.mark.slow]

# Bound on the client's tests; not a timing assertion.
TEST_TIMEOUT_SECONDS = 300


def test_the_typescript_client_passes_its_tests_against_a_live_server() -> None:
    npm = typescript_package.npm()
    env = {k: v for k, v in os.environ.items() if not k.startswith("REARVIEW_")}
    env["REARVIEW_BIN"] = str(Path(sys.executable).with_name("rearview"))
    with typescript_package.installed_package() as package:
        run = subprocess.run(
            [npm, "test"], cwd=package, env=env, capture_output=True, text=True, timeout=TEST_TIMEOUT_SECONDS
        )
    assert run.returncode == 0, run.stdout[-6000:] + run.stderr[-3000:]
    assert "# fail 0" in run.stdout and "# pass 3" in run.stdout, run.stdout[-3000:]
