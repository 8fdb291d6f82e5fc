"""`rearview mcp` over stdio, as a desktop agent runs it: the SDK's stdio client spawns `python -m rearview.cli mcp`
on a temporary data directory (hashing embedder), in the open local mode and with an API key."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from mcp import Client, StdioServerParameters

from rearview.api.mcp import TOOL_NAMES
from rearview.bootstrap import build
from rearview.settings import Settings
from support.mcp_calls import TOOL_ARGS, run
from support.stats import usage_stats

pytestmark = [pytest.mark.integration, pytest.mark.slow]

NS = "acme:u-42"


def server_params(data_dir: Path, **env: str) -> StdioServerParameters:
    return StdioServerParameters(
        command=sys.executable,
        args=["-m", "rearview.cli", "mcp"],
        env={
            "REARVIEW_DATA_DIR": str(data_dir),
            "REARVIEW_EMBEDDER": "hashing",
            "REARVIEW_LOG_LEVEL": "WARNING",
            **env,
        },
    )


async def _session(params: StdioServerParameters, calls: list[tuple[str, dict[str, Any]]]) -> list[Any]:
    async with Client(params) as client:
        tools = await client.list_tools()
        return [tools, *[await client.call_tool(name, args) for name, args in calls]]


def test_open_local_mode_lists_and_calls_every_tool(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    calls = [(name, {**TOOL_ARGS[name], "namespace": NS}) for name in TOOL_ARGS]  # the order their state needs
    calls += [
        ("memory_stats", {}),
        ("recall", {"query": "x", "top_k": 0}),
        ("remember", {"content": ""}),
    ]

    tools, *results = run(_session(server_params(data_dir), calls))

    assert sorted(t.name for t in tools.tools) == sorted(TOOL_NAMES)
    by_tool = dict(zip(TOOL_ARGS, results, strict=False))
    for name, result in by_tool.items():
        assert not result.is_error, (name, result.content)
    assert by_tool["remember"].structured_content["status"] == "stored"
    # Recall answers compact text: the memory's line ends with its id.
    first_line = by_tool["recall"].content[0].text.splitlines()[0]
    assert first_line.endswith(f"id {by_tool['remember'].structured_content['id']})"), first_line
    default_stats, bad_top_k, empty_content = results[len(TOOL_NAMES) :]
    assert default_stats.structured_content["namespace"] == "default"
    assert bad_top_k.is_error and "top_k" in bad_top_k.content[0].text
    assert empty_content.is_error and "content: must not be empty" in empty_content.content[0].text
    # The same data directory, read back without MCP: the calls really went to it (forget ran after remember).
    services = build(Settings(data_dir=data_dir, embedder="hashing"))
    try:
        assert usage_stats(services.store, NS, services.clock.now()).counts["episodic"] == 0
        assert usage_stats(services.store, NS, services.clock.now()).recall_count == 2
    finally:
        services.close()


def test_with_a_token_the_keys_scope_and_permissions_apply(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    services = build(Settings(data_dir=data_dir, embedder="hashing"))
    try:
        key = services.access.create_key("acme", ["read", "write"])[1]
    finally:
        services.close()

    _, remembered, default_stats, other, forget = run(
        _session(
            server_params(data_dir, REARVIEW_TOKEN=key),
            [
                ("remember", {"content": "Acme's fiscal year starts in April", "namespace": NS}),
                ("memory_stats", {}),
                ("recall", {"query": "fiscal year", "namespace": "globex"}),
                ("forget", {"tags": ["x"], "namespace": NS}),
            ],
        )
    )

    assert not remembered.is_error
    assert default_stats.structured_content["namespace"] == "acme"
    assert other.is_error and "scope does not include 'globex'" in other.content[0].text
    assert forget.is_error and "lacks the 'forget' permission" in forget.content[0].text


def test_a_bad_token_is_refused_at_start(tmp_path: Path) -> None:
    env = {**os.environ, "REARVIEW_DATA_DIR": str(tmp_path / "data"), "REARVIEW_EMBEDDER": "hashing"}

    done = subprocess.run(
        [sys.executable, "-m", "rearview.cli", "mcp", "--token", "rv_0123456789abcdef_wrong"],
        env=env,
        input="",
        capture_output=True,
        text=True,
        timeout=120,
    )

    assert done.returncode == 2
    assert "unknown or invalid API key" in done.stderr
    assert done.stdout == ""  # stdout is the protocol channel: nothing else may go there


# --- the background worker ----------------------------------------------------------------------------------------

# How long the worker may take to run a job (an upper bound on waiting, never a timed assertion).
WORKER_DEADLINE_SECONDS = 60.0


async def _failures_then_stats(params: StdioServerParameters) -> tuple[Any, list[Any]]:
    """Three failed deploys (the failure-streak trigger's default), then `memory_stats` until a run shows."""
    async with Client(params) as client:
        for n in range(3):
            await client.call_tool("remember", {
                "namespace": NS, "content": f"Deployed the api service to prod, attempt {n}", "event_type": "deploy",
                "outcome": "failed: permission denied on iam:PassRole",
            })  # fmt: skip
        seen: list[Any] = []
        deadline = asyncio.get_running_loop().time() + WORKER_DEADLINE_SECONDS
        while asyncio.get_running_loop().time() < deadline:
            stats = await client.call_tool("memory_stats", {"namespace": NS})
            seen.append(stats.structured_content["hindsight"])
            if seen[-1]["runs"]:
                break
            await asyncio.sleep(0.2)
        brief = await client.call_tool("brief", {"namespace": NS, "task": "Deploy the api service to prod"})
        return brief, seen


def test_the_consolidation_worker_runs_behind_the_stdio_server(tmp_path: Path) -> None:
    """As `rearview serve` does, `rearview mcp` runs the worker: a failure streak written over stdio is consolidated
    into a lesson with no `consolidate` call, and brief (compact text by default) gives it."""
    brief, seen = run(_failures_then_stats(server_params(tmp_path / "data")))

    assert seen[-1]["runs"] >= 1 and seen[-1]["last_run_reason"] == "failure_streak", seen[-1]
    assert seen[-1]["induced"]["lesson"] >= 1
    text = brief.content[0].text
    assert brief.structured_content is None and "lesson" in text and "permission denied" in text, text


def test_with_the_worker_off_nothing_runs_until_asked(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    params = server_params(data_dir, REARVIEW_HINDSIGHT__WORKER="false")
    calls = [
        ("remember", {"namespace": NS, "content": f"Deployed the api service to prod, attempt {n}",
                      "outcome": "failed: permission denied on iam:PassRole"})
        for n in range(3)
    ]  # fmt: skip
    calls += [
        ("memory_stats", {"namespace": NS}),
        ("consolidate", {"namespace": NS}),
        ("memory_stats", {"namespace": NS}),
    ]

    _, *results = run(_session(params, calls))
    before, consolidated, after = results[-3:]

    assert before.structured_content["hindsight"]["runs"] == 0
    assert not consolidated.is_error
    assert after.structured_content["hindsight"]["runs"] == 1


def test_the_server_says_on_stderr_whether_consolidation_runs_by_itself(tmp_path: Path) -> None:
    """stdout carries the protocol alone; stderr says what runs behind it (and how to turn the worker off)."""
    for env, said in (({}, "consolidation runs by itself"), ({"REARVIEW_HINDSIGHT__WORKER": "false"}, "worker off")):
        done = subprocess.run(
            [sys.executable, "-m", "rearview.cli", "mcp"],
            input=b"",
            capture_output=True,
            env={**os.environ, "REARVIEW_DATA_DIR": str(tmp_path / "data"), "REARVIEW_EMBEDDER": "hashing", **env},
            timeout=120,
            check=False,
        )
        assert said in done.stderr.decode(), done.stderr.decode()
        assert done.stdout == b""
