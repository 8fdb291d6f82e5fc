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
# Set on a test whose body failed (tests/e2e/conftest.py), so that a browser fixture keeps the page at teardown.
BODY_FAILED = pytest.StashKey[bool]()


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


def body_failed(item: pytest.Item) -> bool:
    """True once the test's body has failed (for a fixture's teardown)."""
    return item.stash.get(BODY_FAILED, False)


class PageLog:
    """What a page did, kept so that a failed test can say it: every response (method, status, path) and every
    console message, in order."""

    def __init__(self, page: Any) -> None:
        self.lines: list[str] = []
        page.on("response", lambda r: self.lines.append(f"{r.request.method} {r.status} {_path(r.url)}"))
        page.on("requestfailed", lambda r: self.lines.append(f"{r.method} FAILED {_path(r.url)}: {r.failure}"))
        page.on("console", lambda m: self.lines.append(f"console.{m.type}: {m.text}"))
        page.on("pageerror", lambda exc: self.lines.append(f"page error: {exc}"))

    def keep(self, page: Any, folder: Path) -> Path:
        """The page as it stands (screenshot, HTML) and this log, in `folder`; returns the log's path."""
        folder.mkdir(parents=True, exist_ok=True)
        try:
            page.screenshot(path=folder / "failure.png", full_page=True)
            (folder / "failure.html").write_text(page.content())
        except Exception as exc:  # the page or browser is gone: the log still says what happened
            self.lines.append(f"(page not captured: {exc})")
        log = folder / "failure.log"
        log.write_text("\n".join(self.lines) + "\n")
        return log


def _path(url: str) -> str:
    from urllib.parse import urlsplit

    parts = urlsplit(url)
    return parts.path + (f"?{parts.query}" if parts.query else "")
