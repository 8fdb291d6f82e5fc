"""Each view of the inspector at /ui in headless Chromium (Debian's package, driven by Playwright; no browser
download) at 390, 1024 and 1440 px, against a LocalServer with API keys enforced, as a new user would use it: the
first paint asks for a key; the timeline reads by day and session with outcome marks and what each episode taught;
a learnt memory shows its sources' text; search shows what the agent gets and explains a miss in words; the stats
page draws recalls, what was learnt, the runs and the feedback. The state: an error empties the list, a memory
opened in one namespace is never asked for in another, a big namespace has a text filter and counts. The layout:
no column narrower than a sentence, asserted on element widths. Screenshots of each view are kept as artifacts.

Skips, saying why, where Chromium or Playwright is missing (`.ci/run` installs both where it can)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from rearview.api.local_server import LocalServer
from rearview.bootstrap import Services, build
from rearview.clock import ManualClock
from rearview.domain.brief import BriefRequest, FeedbackRequest
from rearview.domain.consolidate import ConsolidateRequest
from rearview.domain.recall import RecallQuery
from rearview.domain.write import MemoryWrite
from rearview.settings import Settings
from support.artifacts import artifact_dir
from support.browser import LAUNCH_ARGS, PageLog, body_failed, playwright_and_chromium

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

NS, OTHER, BIG, FORBIDDEN = "acme:u-42", "acme:u-7", "acme:big", "globex:u-1"
BIG_EPISODES = 1600
HARBOUR_EVERY = 80  # every 80th episode of the big namespace mentions the harbour
WIDTHS = [390, 1024, 1440]
# Bounds on waiting for the page (rendering, one API round trip); not timing assertions.
WAIT_MS = 20_000
# The narrowest a memory's text may be laid out: about forty characters a line, never a word a line.
MIN_TEXT_WIDTH = 240


@dataclass
class World:
    server: LocalServer
    services: Services
    key: str
    now: datetime


def _story(services: Services, clock: ManualClock, now: datetime) -> None:
    """Three days of an agent's work in NS, the last of them yesterday: a preference asked for in three chats, a
    deploy that failed four times in one session and then worked, a booking; consolidation learns a preference and
    a lesson; recalls on three days; a brief today, and the lesson found useful. Times are set from noon (UTC), so
    the days do not depend on the hour the test runs."""
    day = timedelta(days=1)
    end = now
    now = now.replace(hour=12, minute=0, second=0) - day
    asks = ["Please answer in Chinese from now on.", "Can you reply in Chinese?", "Chinese, please."]
    for n, text in enumerate(asks):
        services.writer.write(NS, MemoryWrite(content=text, session_id=f"chat-{n}", occurred_at=now - (3 - n) * day))
    for n in range(4):
        services.writer.write(
            NS,
            MemoryWrite(
                content=f"Deploy to staging failed: the database migration timed out (attempt {n + 1})",
                session_id="deploy-1",
                event_type="deploy",
                entities=["staging"],
                outcome="migration timeout",
                outcome_status="failure",
                occurred_at=now - 2 * day + timedelta(minutes=10 * n),
            ),
        )
    services.writer.write(NS, MemoryWrite(content="Deployed to staging after raising the migration timeout to 10 "
                          "minutes", session_id="deploy-1", event_type="deploy", entities=["staging"],
                          outcome_status="success", occurred_at=now - 2 * day + timedelta(hours=1)))  # fmt: skip
    services.writer.write(NS, MemoryWrite(content="Booked the 9:40 flight to Lisbon with an aisle seat",
                          tags=["travel"], event_type="booking", occurred_at=now - day))  # fmt: skip
    clock.set(now - 2 * day + timedelta(hours=2))
    services.consolidation.consolidate(NS, ConsolidateRequest())
    asked = ((2, "how do staging deploys fail?"), (1, "which language should replies be in?"), (0, "a trip"))
    for back, query in asked:
        clock.set(now - back * day + timedelta(hours=3))
        services.recaller.recall(NS, RecallQuery(query=query))
        services.recaller.recall(NS, RecallQuery(query="quantum chromodynamics lattice gauge theory"))
    clock.set(end)
    briefed = services.briefer.brief(NS, BriefRequest(task="deploy the new schema to staging", tool="deploy"))
    lesson = next(item.memory.id for item in briefed.items if item.memory.kind == "lesson")
    services.feedback.feedback(NS, FeedbackRequest(memory_id=lesson, verdict="useful"))


def _big_namespace(services: Services, now: datetime) -> None:
    items = [
        MemoryWrite(
            content=f"Checked the {'harbour' if n % HARBOUR_EVERY == 0 else 'garden'} logbook, entry {n}",
            session_id=f"rounds-{n // 40}",
            occurred_at=now - timedelta(minutes=10 * (BIG_EPISODES - n)),
            importance=0.5,
        )
        for n in range(BIG_EPISODES)
    ]
    for start in range(0, len(items), 100):
        services.writer.write_batch(BIG, items[start : start + 100])


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    now = datetime.now(UTC).replace(microsecond=0)
    clock = ManualClock(now)
    services = build(Settings(data_dir=tmp_path_factory.mktemp("data"), embedder="hashing"), clock=clock)
    key = services.access.create_key("acme", ["read", "write", "forget"])[1]
    _story(services, clock, now)
    _big_namespace(services, now)
    services.writer.write(OTHER, MemoryWrite(content="Dana sent the slides for the Porto workshop"))
    services.writer.write(FORBIDDEN, MemoryWrite(content="Another tenant's memory"))
    with LocalServer(services.settings, services, host="127.0.0.1", port=0) as server:
        yield World(server, services, key, now)
    services.close()


class Browser:
    """Chromium, and the pages a test opened in it with what each did (kept when the test fails)."""

    def __init__(self, launched: Any) -> None:
        self._launched = launched
        self.opened: list[tuple[Any, PageLog]] = []

    def page(self, width: int) -> tuple[Any, list[str]]:
        """A page `width` px wide, and the script errors it meets (an API's 4xx answer the page shows is not one)."""
        page = self._launched.new_page(viewport={"width": width, "height": 900})
        page.set_default_timeout(WAIT_MS)
        errors: list[str] = []
        page.on("pageerror", lambda exc: errors.append(str(exc)))
        page.on(
            "console",
            lambda msg: (
                errors.append(msg.text) if msg.type == "error" and not re.search(r"status of 4\d\d", msg.text) else None
            ),
        )
        self.opened.append((page, PageLog(page)))
        return page, errors


@pytest.fixture
def browser(request: pytest.FixtureRequest) -> Iterator[Browser]:
    sync_playwright, chromium = playwright_and_chromium()
    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=chromium, headless=True, args=LAUNCH_ARGS)
        opened = Browser(launched)
        yield opened
        if body_failed(request.node):
            for n, (page, log) in enumerate(opened.opened):
                kept = log.keep(page, artifact_dir(f"{request.node.name}-{n}"))
                print(f"page {n} at the failure, and what it did: {kept}")
        launched.close()


def _sign_in(page: Any, world: World, namespace: str) -> None:
    """The first paint asks for a key (no error); the key goes in; the namespace opens."""
    page.goto(f"{world.server.url}/ui")
    page.get_by_test_id("key-prompt").wait_for()
    assert page.get_by_test_id("error").count() == 0
    page.get_by_test_id("key-prompt-input").fill(world.key)
    page.get_by_test_id("key-prompt-input").press("Enter")
    page.get_by_test_id("tab-timeline").wait_for()
    _open_namespace(page, namespace)


def _open_namespace(page: Any, namespace: str) -> None:
    page.get_by_test_id("namespace").fill(namespace)
    page.get_by_test_id("open").click()


def _width(locator: Any) -> float:
    box = locator.bounding_box()
    assert box is not None
    return float(box["width"])


def _assert_readable(page: Any, width: int, *, with_detail: bool = False) -> None:
    """No column narrower than a sentence: every memory's text is laid out at least MIN_TEXT_WIDTH wide, the view
    takes the width the screen leaves it, and an open memory is at least as wide as a phone."""
    texts = page.locator('[data-testid="memory"] .content')
    for i in range(min(texts.count(), 12)):
        assert _width(texts.nth(i)) >= MIN_TEXT_WIDTH, (width, i, _width(texts.nth(i)))
    view = _width(page.get_by_test_id("view"))
    if not with_detail or width < 1000:
        assert view >= width - 40, (width, view)
    else:
        assert view >= 0.55 * width, (width, view)
    if with_detail:
        pane = _width(page.get_by_test_id("detail-pane"))
        assert pane >= min(width, 340), (width, pane)


@pytest.mark.parametrize("width", WIDTHS)
def test_a_new_user_learns_what_the_agent_learnt_from_what_and_why_a_recall_missed(
    world: World, browser: Browser, width: int
) -> None:
    from playwright.sync_api import expect

    shots = artifact_dir(f"inspector-views-{width}")
    page, errors = browser.page(width)
    page.goto(f"{world.server.url}/ui")
    page.get_by_test_id("key-prompt").wait_for()
    page.screenshot(path=shots / "0-asks-for-a-key.png", full_page=True)
    _sign_in(page, world, NS)

    # The timeline: days, sessions, outcome marks, and what each episode taught.
    page.get_by_test_id("day").first.wait_for()
    assert page.get_by_test_id("day").count() == 3  # the story's three days, newest first
    deploy = page.locator('[data-testid="session"][data-session="deploy-1"]')
    expect(deploy.locator('[data-outcome="failure"]')).to_have_count(4)
    expect(deploy.locator('[data-outcome="success"]')).to_have_count(1)
    assert "4 failed" in deploy.locator("h4").inner_text()
    assert page.get_by_test_id("counts").inner_text() == "Showing 9 of 9 episodes"
    assert page.locator('[data-testid="memory"]').filter(has_text="v2").count() == 0  # no version badges
    taught = deploy.get_by_test_id("taught-link").first
    expect(taught).to_contain_text("lesson")
    _assert_readable(page, width)
    page.screenshot(path=shots / "1-timeline.png", full_page=True)

    # What was learnt, from what: the lesson an episode taught, and its sources' text inline.
    taught.click()
    detail = page.get_by_test_id("detail")
    expect(detail).to_contain_text("Learnt from")
    sources = page.get_by_test_id("source")
    expect(sources).to_have_count(5)  # the four failures, and what worked after them
    assert "database migration timed out" in sources.first.inner_text()
    expect(sources.first.get_by_test_id("outcome")).to_have_attribute("data-outcome", "failure")
    expect(sources.last).to_contain_text("raising the migration timeout")
    expect(sources.last.get_by_test_id("outcome")).to_have_attribute("data-outcome", "success")
    _assert_readable(page, width, with_detail=True)
    page.screenshot(path=shots / "2-lesson-and-its-sources.png", full_page=True)
    page.get_by_test_id("provenance-link").first.click()
    expect(page.get_by_test_id("fed-link")).to_have_count(1)  # the episode, and the lesson learnt from it
    page.get_by_test_id("close").click()

    page.get_by_test_id("tab-knowledge").click()
    learnt = page.get_by_test_id("memory")
    expect(learnt).to_have_count(2)
    assert {"preference", "lesson"} <= {
        t.split()[0] for t in page.locator('[data-testid="memory"] .badge').all_inner_texts()
    }
    _assert_readable(page, width)
    page.screenshot(path=shots / "3-what-it-learnt.png", full_page=True)

    # What the agent gets for a question, beside the ranked list.
    page.get_by_test_id("tab-search").click()
    page.get_by_test_id("search-input").fill("what went wrong with the staging deploy?")
    page.get_by_test_id("search-go").click()
    first = page.get_by_test_id("result").first
    first.wait_for()
    block = page.get_by_test_id("agent-text").inner_text()
    assert block.startswith("Memories, most relevant first") and f"id {first.get_attribute('data-id')}" in block
    assert re.search(r"≈ \d+ tokens", page.get_by_test_id("agent-tokens").inner_text())
    assert page.locator('[data-testid="why"] [data-technical]').count() > 0  # words, with the figure on hover
    page.screenshot(path=shots / "4-search.png", full_page=True)

    # A miss, explained: a warning, what was found and why each fell, the figure on hover.
    page.get_by_test_id("search-input").fill("quantum chromodynamics lattice gauge theory")
    page.get_by_test_id("search-go").click()
    miss = page.get_by_test_id("no-relevant")
    miss.wait_for()
    assert "warning" in (miss.get_attribute("class") or "")
    assert page.get_by_test_id("agent-text").inner_text().startswith("No relevant memory")
    fell = page.get_by_test_id("dropped-candidate")
    assert fell.count() >= 3
    reason = fell.first.get_by_test_id("dropped-reason")
    assert fell.first.get_attribute("data-reason") == "floor" and "relevant" in reason.inner_text()
    # The figures, on hover and in words: the trace's own fields, never NaN.
    assert re.search(r"strength \d\.\d{3} < floor 1\.000", reason.get_attribute("title") or "")
    assert re.search(r"the closest scored \d\.\d\d where 1\.00 counts as relevant", miss.inner_text())
    assert "NaN" not in miss.inner_text()
    expect(fell.first).not_to_contain_text(fell.first.get_attribute("data-id") or "?")  # its text, not its id
    page.screenshot(path=shots / "5-a-miss-explained.png", full_page=True)

    # The time a query names, understood.
    page.get_by_test_id("search-input").fill("what happened yesterday?")
    page.get_by_test_id("search-go").click()
    expect(page.get_by_test_id("time-range").first).to_contain_text("“yesterday” was read as")

    # The stats page: small charts.
    page.get_by_test_id("tab-stats").click()
    recalls = page.get_by_test_id("recall-chart").get_by_test_id("column")
    expect(recalls).to_have_count(30)
    titles = [recalls.nth(i).get_attribute("title") or "" for i in range(30)]
    assert [t for t in titles if "2 recalls" in t] and all("found something" in t for t in titles)
    expect(page.get_by_test_id("runs-chart").get_by_test_id("column")).to_have_count(1)
    assert "why: asked for" in (
        page.get_by_test_id("runs-chart").get_by_test_id("column").first.get_attribute("title") or ""
    )
    feedback = page.get_by_test_id("feedback-chart")
    expect(feedback.get_by_test_id("feedback-row")).to_have_count(1)
    expect(feedback).to_contain_text("1 of 1 useful verdict were on memories recall or brief had handed the agent")
    expect(page.get_by_test_id("learned-chart")).to_contain_text("1 preference, 1 lesson")
    assert _width(page.get_by_test_id("recall-chart")) >= min(width - 40, 300)
    page.screenshot(path=shots / "6-stats.png", full_page=True)
    assert errors == [], errors


def test_an_error_empties_the_list_and_a_switch_never_asks_for_the_old_memory(world: World, browser: Browser) -> None:
    from playwright.sync_api import expect

    shots = artifact_dir("inspector-state")
    page, errors = browser.page(1024)
    requests: list[str] = []
    page.on("request", lambda request: requests.append(request.url))
    _sign_in(page, world, NS)
    page.get_by_test_id("memory").first.wait_for()

    # An invalid namespace, then one outside the key's scope: the error shows, the last namespace's list goes.
    for namespace, said in (("bad namespace!", "namespace"), (FORBIDDEN, "")):
        _open_namespace(page, namespace)
        page.get_by_test_id("error").wait_for()
        expect(page.get_by_test_id("memory")).to_have_count(0)
        assert page.get_by_test_id("counts").count() == 0
        assert said in page.get_by_test_id("error").inner_text()
    page.screenshot(path=shots / "1-an-error-empties-the-list.png", full_page=True)

    # A memory open in one namespace; another namespace opens: the old id is never asked for there.
    _open_namespace(page, NS)
    page.get_by_test_id("memory").first.click()
    opened = page.get_by_test_id("detail").get_attribute("data-id")
    requests.clear()
    _open_namespace(page, OTHER)
    expect(page.get_by_test_id("memory")).to_have_count(1)
    expect(page.get_by_test_id("detail-pane")).to_have_count(0)
    assert not [url for url in requests if f"/memories/{opened}" in url], requests
    assert all(f"/namespaces/{NS}/" not in url for url in requests), requests
    page.screenshot(path=shots / "2-another-namespace.png", full_page=True)

    # A wrong key is told, and nothing is shown.
    page.get_by_test_id("api-key").fill(world.key[:-2] + "xx")
    page.get_by_test_id("open").click()
    expect(page.get_by_test_id("error")).to_contain_text("unknown or invalid API key", ignore_case=True)
    expect(page.get_by_test_id("memory")).to_have_count(0)
    assert errors == [], errors


@pytest.mark.parametrize("width", [360, 1440])
def test_a_big_namespace_has_counts_and_a_text_filter(world: World, browser: Browser, width: int) -> None:
    from playwright.sync_api import expect

    shots = artifact_dir(f"inspector-big-{width}")
    page, errors = browser.page(width)
    _sign_in(page, world, BIG)
    expect(page.get_by_test_id("counts")).to_have_text("Showing 50 of 1,600 episodes")
    page.get_by_test_id("more").click()
    expect(page.get_by_test_id("counts")).to_have_text("Showing 100 of 1,600 episodes")
    _assert_readable(page, width)
    page.screenshot(path=shots / "1-counts.png")

    page.get_by_test_id("filter-text").fill("Harbour")
    page.get_by_test_id("filter-text").press("Enter")
    matches = BIG_EPISODES // HARBOUR_EVERY
    expect(page.get_by_test_id("counts")).to_have_text(f"{matches} episodes hold “Harbour”, in the 1,600 of 1,600 read")
    found = page.locator('[data-testid="memory"] .content').all_inner_texts()
    assert len(found) == matches and all("harbour" in text for text in found)
    page.screenshot(path=shots / "2-text-filter.png", full_page=True)
    assert errors == [], errors
