"""The console on a phone-sized screen (390 x 844): nothing spills sideways out of the page;
wide tables scroll inside their own box. Real daphne, a real worker, Debian's Chromium."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import redis
from playwright.sync_api import Browser, Page, ViewportSize, expect

from tests.support.browser import CHROMIUM, PASSWORD, USERNAME, WAIT_MS

# Fixtures shared with the desktop browser tests.
from tests.support.browser import browser as browser
from tests.support.browser import staff_user as staff_user
from tests.support.console_server import Console
from tests.support.engine import STREAM, counters
from tests.support.processes import Workers
from tests.support.wait import wait_for
from workers.core.keys import dead_stream
from workers.producers.publish import publish

PHONE: ViewportSize = {"width": 390, "height": 844}
STREAM_PATH = f"/streams/{STREAM}/"

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(not CHROMIUM.exists(), reason=f"no Chromium at {CHROMIUM} (apt chromium)"),
]

# Elements whose right edge passes the viewport, for the failure message.
WIDE = """
() => {
  const width = document.documentElement.clientWidth;
  return Array.from(document.querySelectorAll("body *"))
    .filter((el) => el.getBoundingClientRect().right > width + 1)
    .filter((el) => !el.closest("table, pre, .scroll"))  // those scroll inside their own box
    .slice(0, 8)
    .map((el) => `${el.tagName.toLowerCase()}.${el.className} ${el.getBoundingClientRect().right}`);
}
"""


@pytest.fixture
def phone(browser: Browser, console: Console) -> Iterator[Page]:
    context = browser.new_context(base_url=console.url, viewport=PHONE, is_mobile=True)
    page = context.new_page()
    page.goto("/login/")
    page.fill("input[name=username]", USERNAME)
    page.fill("input[name=password]", PASSWORD)
    page.click("button[type=submit]")
    expect(page).to_have_url(f"{console.url}/")
    yield page
    context.close()


def assert_fits(page: Page, path: str) -> None:
    page.goto(path)
    # The live fragments and charts arrive over the websocket: measure what a person sees.
    if page.locator("#live-status").count():
        expect(page.locator("#live-status")).to_have_attribute(
            "data-state", "live", timeout=WAIT_MS
        )
    sizes: dict[str, Any] = page.evaluate(
        "() => ({scroll: document.documentElement.scrollWidth,"
        " client: document.documentElement.clientWidth})"
    )
    assert sizes["scroll"] <= sizes["client"], (path, sizes, page.evaluate(WIDE))


def test_pages_fit_a_phone_screen(
    r: redis.Redis, console: Console, workers: Workers, phone: Page, tmp_path: Path
) -> None:
    subject = "customer/" + "x" * 80  # a long unbroken value, as real subjects are
    for n in range(5):
        publish("demo.echo", {"n": n}, client=r, source="phone-test", subject=f"{subject}{n}")
    dead = publish("demo.fail", {"message": "boom " * 30}, client=r, source="phone-test")
    workers.start("phone-worker")
    wait_for(lambda: counters(r).get("processed", 0) == 5, what="five events processed")
    wait_for(lambda: r.xlen(dead_stream(STREAM)) == 1, what="the failing event dead-lettered")

    for path in (
        "/",
        STREAM_PATH,
        f"{STREAM_PATH}groups/agents/",
        f"{STREAM_PATH}dead/",
        f"{STREAM_PATH}entries/{dead}/",
    ):
        assert_fits(phone, path)
        shot = tmp_path / f"phone{path.replace('/', '_')}.png"
        phone.screenshot(path=str(shot), full_page=True)
        print(f"screenshot: {shot}")

    # A wide table scrolls inside itself, not the page.
    phone.goto(STREAM_PATH)
    table = phone.locator("#entries table")
    overflow = table.evaluate("el => getComputedStyle(el).overflowX")
    assert overflow == "auto"
    assert table.evaluate("el => el.scrollWidth > el.clientWidth")


def test_favicon_is_served(console: Console, phone: Page) -> None:
    response = phone.request.get("/favicon.ico")
    assert response.status == 200
    assert re.search(r"/static/console/favicon\.ico$", response.url)
    assert response.body()[:4] == b"\x00\x00\x01\x00"
