"""End-to-end fixtures: the browser tests' screenshots, said at the end of the run, and whether a test's own body
failed (a browser fixture then keeps the page and what it did)."""

from __future__ import annotations

from collections.abc import Generator

import pytest

from support.artifacts import WRITTEN
from support.browser import BODY_FAILED


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    report = yield
    if report.when == "call" and report.failed:
        item.stash[BODY_FAILED] = True
    return report


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    for folder in WRITTEN:
        shots = sorted(p.name for p in folder.glob("*.png"))
        if shots:
            terminalreporter.write_line(f"browser screenshots: {folder} ({len(shots)}: {', '.join(shots)})")
