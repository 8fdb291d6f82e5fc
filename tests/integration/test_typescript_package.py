"""The TypeScript client as a user installs it: `npm pack` in clients/typescript builds `dist/` (its `prepack`) into a
tarball, a scratch project installs that tarball (and its dependency from the registry), and the scratch project's
own test, importing `@rearview/client` by name, writes and recalls against a live local server. Skips, saying why,
where node or npm is missing."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from rearview.api.local_server import LocalServer
from rearview.bootstrap import build
from rearview.settings import Settings
from support import typescript_package

pytestmark = [pytest.mark.integration, pytest.mark.slow]

# Bound on npm (an install from the registry, a build); not a timing assertion.
NPM_TIMEOUT_SECONDS = 600

SCRATCH_TEST = """
import { test } from "node:test";
import assert from "node:assert/strict";
import { createRearview, RearviewError } from "@rearview/client";

test("the packed client writes and recalls against a live server", async () => {
  const rv = createRearview({ baseUrl: process.env.REARVIEW_URL, token: process.env.REARVIEW_TOKEN });
  assert.equal((await rv.health()).status, "ok");
  const written = await rv.write("acme:u-42", { content: "Booked the night train to Vienna, lower berth" });
  const found = await rv.recall("acme:u-42", { query: "night train to Vienna" });
  assert.deepEqual(found.results.map((hit) => hit.id), [written.id]);
  const refused = (error) => error instanceof RearviewError && error.status === 403;
  await assert.rejects(rv.recall("globex", { query: "train" }), refused);
});
"""


def _run(command: list[str], cwd: Path, env: dict[str, str] | None = None) -> str:
    done = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, timeout=NPM_TIMEOUT_SECONDS)
    assert done.returncode == 0, f"{command}: {done.stdout[-4000:]}\n{done.stderr[-4000:]}"
    return done.stdout


def test_npm_pack_installs_into_a_scratch_project_that_calls_a_live_server(tmp_path: Path) -> None:
    npm = typescript_package.npm()
    with typescript_package.installed_package() as package:
        packed = json.loads(_run([npm, "pack", "--json", "--pack-destination", str(tmp_path)], package))
    (tarball,) = [tmp_path / entry["filename"] for entry in packed]
    shipped = {entry["path"] for entry in packed[0]["files"]}
    assert {"dist/src/index.js", "dist/src/index.d.ts", "dist/src/schema.d.ts", "package.json"} <= shipped
    assert not any(path.startswith(("src/", "test/", "dist/test/")) for path in shipped), shipped

    scratch = tmp_path / "scratch"
    scratch.mkdir()
    (scratch / "package.json").write_text(json.dumps({"name": "scratch", "private": True, "type": "module"}))
    _run([npm, "install", "--no-audit", "--no-fund", str(tarball)], scratch)
    (scratch / "client.test.mjs").write_text(SCRATCH_TEST)

    services = build(Settings(data_dir=tmp_path / "data", embedder="hashing"))
    try:
        token = services.access.create_key("acme", ["read", "write"])[1]
        with LocalServer(services.settings, services, host="127.0.0.1", port=0) as server:
            env = {**os.environ, "REARVIEW_URL": server.url, "REARVIEW_TOKEN": token}
            output = _run(["node", "--test", "client.test.mjs"], scratch, env)
    finally:
        services.close()
    assert "# pass 1" in output and "# fail 0" in output, output[-3000:]
