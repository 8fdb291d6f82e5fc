"""End-to-end fixtures: the browser tests' screenshots, said at the end of the run."""

from __future__ import annotations

import pytest

from support.artifacts import WRITTEN


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    for folder in WRITTEN:
        shots = sorted(p.name for p in folder.glob("*.png"))
        if shots:
            terminalreporter.write_line(f"browser screenshots: {folder} ({len(shots)}: {', '.join(shots)})")
