"""The inspector at /ui in headless Chromium (Debian's package, driven by Playwright; no browser download) against a
LocalServer over real services with API keys enforced: load it and enter a key, search and read the explain trace,
open a learnt preference's provenance, edit a memory and see recall change, delete one after confirming, export.
Screenshots of each step are kept (the run's summary says where).

Skips, saying why, where Chromium or Playwright is missing (`.ci/run` installs both where it can)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from rearview.api.local_server import LocalServer
from rearview.bootstrap import Services, build
from rearview.domain.consolidate import ConsolidateRequest
from rearview.domain.recall import RecallQuery
from rearview.domain.write import MemoryWrite
from rearview.settings import Settings
from support.artifacts import artifact_dir
from support.browser import LAUNCH_ARGS, PageLog, body_failed, playwright_and_chromium

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

NS = "acme:u-42"
# Bounds on waiting for the page (rendering, one API round trip); not timing assertions.
WAIT_MS = 15_000


@pytest.fixture
def world(tmp_path: Path) -> Iterator[tuple[LocalServer, Services, str]]:
    services = build(Settings(data_dir=tmp_path / "data", embedder="hashing"))
    key = services.access.create_key("acme", ["read", "write", "forget"])[1]
    for day, text in enumerate(
        ["Please answer in Chinese from now on.", "Can you reply in Chinese?", "Chinese, please."]
    ):
        services.writer.write(NS, MemoryWrite(content=text, session_id=f"chat-{day}"))
    services.consolidation.consolidate(NS, ConsolidateRequest())
    services.writer.write(NS, MemoryWrite(content="Booked the 9:40 flight to Lisbon with an aisle seat", id="ep-flight",
                                          tags=["travel"], event_type="booking"))  # fmt: skip
    services.writer.write(NS, MemoryWrite(content="Dana sent the slides for the Porto workshop", id="ep-slides"))
    with LocalServer(services.settings, services, host="127.0.0.1", port=0) as server:
        yield server, services, key
    services.close()


@pytest.fixture
def page(world: tuple[LocalServer, Services, str], request: pytest.FixtureRequest) -> Iterator[Any]:
    sync_playwright, chromium = playwright_and_chromium()
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=chromium, headless=True, args=LAUNCH_ARGS)
        context = browser.new_context(viewport={"width": 1280, "height": 900}, accept_downloads=True)
        page = context.new_page()
        page.set_default_timeout(WAIT_MS)
        errors: list[str] = []
        page.on("pageerror", lambda exc: errors.append(str(exc)))
        page.on(
            "console", lambda msg: errors.append(msg.text) if msg.type == "error" and "401" not in msg.text else None
        )
        log = PageLog(page)
        yield page
        if body_failed(request.node):
            print(f"the page at the failure, and what it did: {log.keep(page, artifact_dir(request.node.name))}")
        context.close()
        browser.close()
        assert errors == [], errors


def test_the_inspector_end_to_end(world: tuple[LocalServer, Services, str], page: Any) -> None:
    from playwright.sync_api import expect

    server, services, key = world
    shots = artifact_dir("inspector")
    requests: list[str] = []
    page.on("request", lambda request: requests.append(request.url))

    # Load: the page and its script come from the server itself; the key goes in, the namespace is offered.
    page.goto(f"{server.url}/ui")
    page.get_by_test_id("api-key").fill(key)
    page.get_by_test_id("namespace").fill(NS)
    page.get_by_test_id("open").click()
    episodes = page.get_by_test_id("memory")
    episodes.first.wait_for()
    assert "Dana sent the slides" in episodes.first.inner_text()
    # The namespace picker offers the namespaces the key may see (GET /v1/namespaces), with their counts.
    offered = page.locator("#namespaces option")
    expect(offered).to_have_count(1)
    assert offered.first.get_attribute("value") == NS and offered.first.inner_text() == "5 episodes, 1 learnt"
    page.screenshot(path=shots / "1-load.png", full_page=True)

    # Search: results with a score chart each, and the per-stage trace.
    page.get_by_test_id("tab-search").click()
    page.get_by_test_id("search-input").fill("Which language should replies be in?")
    page.get_by_test_id("search-go").click()
    page.get_by_test_id("technical-trace").locator("summary").click()
    page.get_by_test_id("stages").wait_for()
    assert "Chinese" in page.get_by_test_id("result").first.inner_text()
    assert page.get_by_test_id("score-chart").count() == page.get_by_test_id("result").count() > 0
    stages = page.get_by_test_id("stage").all_inner_texts()
    names = [s.split()[0] for s in stages]
    assert names[0] == "parse" and names.index("embed") < names.index("keyword"), names
    page.screenshot(path=shots / "2-search.png", full_page=True)

    # A learnt preference and its provenance: the episodes it was induced from.
    page.get_by_test_id("tab-knowledge").click()
    page.get_by_test_id("memory").filter(has_text="Chinese").first.click()
    links = page.get_by_test_id("provenance-link")
    links.first.wait_for()
    expect(links).to_have_count(3)
    source = page.get_by_test_id("source").first.get_attribute("data-id")
    assert "Chinese" in page.get_by_test_id("source").first.inner_text()  # the source's text, inline
    links.first.click()
    page.locator(f'[data-testid="detail"][data-id="{source}"]').wait_for()
    assert "Chinese" in page.get_by_test_id("detail-content").inner_text()
    page.screenshot(path=shots / "3-provenance.png", full_page=True)

    # Edit a memory, and recall finds the new text, never the old.
    page.get_by_test_id("tab-timeline").click()
    page.get_by_test_id("memory").filter(has_text="Lisbon").first.click()
    page.get_by_test_id("edit").click()
    page.get_by_test_id("edit-content").fill("Booked the 9:40 flight to Lisbon with a window seat")
    page.get_by_test_id("edit-save").click()
    page.get_by_test_id("notice").wait_for()
    assert "version 2" in page.get_by_test_id("notice").inner_text()
    expect(page.get_by_test_id("history").locator("li")).to_have_count(2)
    page.get_by_test_id("tab-search").click()
    page.get_by_test_id("search-input").fill("Which seat on the Lisbon flight?")
    page.get_by_test_id("search-go").click()
    expect(page.get_by_test_id("result").first).to_contain_text("window seat")
    found = " ".join(page.get_by_test_id("result").all_inner_texts())
    assert "window seat" in found and "aisle seat" not in found
    page.screenshot(path=shots / "4-edited.png", full_page=True)
    hits = services.recaller.recall(NS, RecallQuery(query="aisle seat Lisbon flight")).results
    assert not any("aisle" in hit.content for hit in hits)

    # Delete, after confirming.
    page.get_by_test_id("tab-timeline").click()
    page.get_by_test_id("memory").filter(has_text="Porto workshop").first.click()
    page.get_by_test_id("delete").click()
    page.get_by_test_id("confirm").wait_for()
    page.screenshot(path=shots / "5-confirm-delete.png", full_page=True)
    page.get_by_test_id("confirm-yes").click()
    page.get_by_test_id("message").wait_for()
    expect(page.get_by_test_id("memory").filter(has_text="Porto workshop")).to_have_count(0)
    assert services.store.get(NS, "ep-slides") is None
    page.screenshot(path=shots / "6-deleted.png", full_page=True)

    # Export: a download of the namespace as ndjson.
    with page.expect_download() as download:
        page.get_by_test_id("export").click()
    lines = Path(download.value.path()).read_text().splitlines()
    assert {json.loads(line)["id"] for line in lines} >= {"ep-flight"}
    assert "ep-slides" not in {json.loads(line)["id"] for line in lines}

    # Nothing left the server: no CDN, no other host.
    assert requests and all(url.startswith(server.url) or url.startswith("blob:") for url in requests), requests
    # The key stays in the tab: nothing was written to localStorage or cookies.
    assert page.evaluate("() => window.localStorage.length") == 0
    assert page.context.cookies() == []


def test_a_wrong_key_is_told_and_nothing_is_shown(world: tuple[LocalServer, Services, str], page: Any) -> None:
    from playwright.sync_api import expect

    server, _, key = world
    page.goto(f"{server.url}/ui")
    page.get_by_test_id("api-key").fill(key[:-1] + ("A" if key[-1] != "A" else "B"))
    page.get_by_test_id("namespace").fill(NS)
    page.get_by_test_id("open").click()
    # The page's first request went without a key: its error may show before the wrong key's, never after it.
    expect(page.get_by_test_id("error").first).to_contain_text("unknown or invalid API key", ignore_case=True)
    assert page.get_by_test_id("memory").count() == 0


def _key_then_into_the_namespace_field(server: LocalServer, key: str, page: Any) -> Any:
    """The key typed, then a click into the empty namespace field, which commits the key; returns the field once the
    key's namespaces have come back (and the page has picked the first), with the field still in focus."""
    from playwright.sync_api import expect

    page.goto(f"{server.url}/ui")
    page.get_by_test_id("key-prompt").wait_for()
    page.get_by_test_id("api-key").fill(key)
    field = page.get_by_test_id("namespace")
    field.click()
    expect(page.locator("#namespaces option")).to_have_count(1)
    page.get_by_test_id("tab-timeline").wait_for()
    return field


def test_the_page_never_writes_under_the_users_cursor(world: tuple[LocalServer, Services, str], page: Any) -> None:
    """The key's namespaces come back while the user is in the namespace field: what they type there is what they
    open, not the page's pick with their text after it."""
    from playwright.sync_api import expect

    server, _, key = world
    field = _key_then_into_the_namespace_field(server, key, page)
    expect(field).to_have_value("")
    page.keyboard.type(NS)
    page.get_by_test_id("open").click()
    expect(field).to_have_value(NS)
    assert "Dana sent the slides" in page.get_by_test_id("memory").first.inner_text()


def test_a_field_left_without_typing_shows_the_pages_pick(world: tuple[LocalServer, Services, str], page: Any) -> None:
    from playwright.sync_api import expect

    server, _, key = world
    field = _key_then_into_the_namespace_field(server, key, page)
    field.press("Tab")
    expect(field).to_have_value(NS)
    assert "Dana sent the slides" in page.get_by_test_id("memory").first.inner_text()
