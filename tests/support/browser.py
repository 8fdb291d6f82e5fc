"""The browser the inspector's tests drive: Debian's Chromium (`/usr/bin/chromium`, else `chromium` on PATH) through
Playwright, headless, never a browser Playwright would download. Skips, saying why, where either is missing
(`.ci/run` installs both where it can)."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

CHROMIUM = "/usr/bin/chromium"
LAUNCH_ARGS = ["--no-sandbox", "--disable-background-networking"]


def playwright_and_chromium() -> tuple[Any, str]:
    """Playwright's sync API and the Chromium to drive; skips the test where either is missing."""
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        pytest.skip("browser tests: Playwright for Python is not installed (pip install playwright)")
    chromium = CHROMIUM if Path(CHROMIUM).exists() else shutil.which("chromium")
    if chromium is None:
        pytest.skip(f"browser tests: no Chromium at {CHROMIUM} (Debian: apt-get install chromium); .ci/run installs it")
    return sync_playwright, chromium
