"""The console in a real browser: daphne and runworker subprocesses, Chromium driven by
Playwright, against the suite's Redis and test database."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import redis
from playwright.sync_api import Browser, expect

from tests.support.browser import (
    CHROMIUM,
    STREAM_PATH,
    WAIT_MS,
    log_in,
    new_page,
    processed,
    screenshot,
)
from tests.support.browser import browser as browser
from tests.support.browser import staff_user as staff_user
from tests.support.console_server import Console
from tests.support.engine import counters
from tests.support.processes import Workers
from tests.support.wait import wait_for
from workers.producers.publish import publish

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(not CHROMIUM.exists(), reason=f"no Chromium at {CHROMIUM} (apt chromium)"),
]

# Opens the dashboard websocket and reports what it saw once it closes (or after 5 s).
PROBE_WEBSOCKET = """
() => new Promise((resolve) => {
  const seen = { opened: false, messages: 0, closed: false, code: null };
  const socket = new WebSocket(`ws://${location.host}/ws/dashboard/`);
  socket.onopen = () => {
    seen.opened = true;
    socket.send(JSON.stringify({ subscribe: ["overview"] }));
  };
  socket.onmessage = () => { seen.messages += 1; };
  socket.onclose = (event) => { seen.closed = true; seen.code = event.code; resolve(seen); };
  setTimeout(() => resolve(seen), 5000);
})
"""


def test_anonymous_page_request_redirects_to_login(console: Console, browser: Browser) -> None:
    page = new_page(browser, console)
    page.goto(STREAM_PATH)
    expect(page).to_have_url(re.compile(r"/login/\?next=/streams/"))
    expect(page.locator("input[name=username]")).to_be_visible()
    expect(page.locator("[data-live]")).to_have_count(0)


def test_anonymous_websocket_is_closed_without_data(console: Console, browser: Browser) -> None:
    page = new_page(browser, console)
    page.goto("/login/")
    seen = page.evaluate(PROBE_WEBSOCKET)
    # Refused in connect, before accept: the handshake itself fails.
    assert seen["closed"] and not seen["opened"], seen
    assert seen["messages"] == 0, seen


def test_overview_pushes_processed_count_without_reload(
    r: redis.Redis, console: Console, browser: Browser, workers: Workers, tmp_path: Path
) -> None:
    workers.start("browser-worker")
    page = log_in(browser, console)
    # Nothing processed yet: no stream listed, or its worker's stream at 0.
    if processed(page).count():
        expect(processed(page)).to_have_text("0")
    page.evaluate("window.notReloaded = true")

    for n in range(20):
        publish("demo.echo", {"n": n}, client=r, source="browser-test")

    expect(processed(page)).to_have_text("20", timeout=WAIT_MS)
    expect(page.locator("#live-status")).to_have_attribute("data-state", "live")
    assert page.evaluate("window.notReloaded === true"), "the overview was reloaded"
    screenshot(page, tmp_path / "overview.png")


def test_event_page_shows_published_and_committed_steps(
    r: redis.Redis, console: Console, browser: Browser, workers: Workers, tmp_path: Path
) -> None:
    entry_ids = [publish("demo.echo", {"n": n}, client=r, source="browser-test") for n in range(3)]
    workers.start("browser-worker")
    wait_for(lambda: counters(r).get("processed", 0) == 3, what="three events processed")
    page = log_in(browser, console)

    page.click(f'[data-live="overview"] a[href="{STREAM_PATH}"]')
    expect(page).to_have_url(f"{console.url}{STREAM_PATH}")
    newest = page.locator("#entries tbody a").first
    expect(newest).to_have_text(entry_ids[-1])
    newest.click()

    expect(page).to_have_url(f"{console.url}{STREAM_PATH}entries/{entry_ids[-1]}/")
    timeline = page.locator("ol.timeline")
    expect(timeline.locator("li.kind-published")).to_have_count(1)
    expect(timeline.locator("li.kind-committed")).to_have_count(1)
    expect(timeline.locator("li").first).to_have_class(re.compile(r"\bkind-published\b"))
    expect(timeline.locator("li").last).to_have_class(re.compile(r"\bkind-committed\b"))
    screenshot(page, tmp_path / "event-timeline.png")
