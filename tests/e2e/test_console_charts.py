"""The charts in a real browser: uPlot drawn from the recorded history at the first render,
kept current by the websocket without a reload, and the 5 min / 1 h / 24 h selector."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import redis
from django.contrib.auth import get_user_model
from playwright.sync_api import Browser, ConsoleMessage, Page, expect, sync_playwright

from tests.support.browser import (
    CHROMIUM,
    PASSWORD,
    STREAM_PATH,
    USERNAME,
    WAIT_MS,
    log_in,
    new_page,
    screenshot,
)
from tests.support.console_server import Console
from tests.support.engine import STREAM
from tests.support.processes import Workers
from tests.support.wait import wait_for
from workers.core.keys import Keys
from workers.producers.publish import publish

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(not CHROMIUM.exists(), reason=f"no Chromium at {CHROMIUM} (apt chromium)"),
]

THROUGHPUT = f'[data-chart="chart:throughput:stream:{STREAM}"]'
BACKLOG = f'[data-chart="chart:backlog:stream:{STREAM}"]'


@pytest.fixture
def browser(transactional_db: Any) -> Iterator[Browser]:
    # The user first: Django refuses ORM calls while Playwright's event loop runs.
    get_user_model().objects.create_user(USERNAME, password=PASSWORD, is_staff=True)
    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=str(CHROMIUM), headless=True)
        yield chromium
        chromium.close()


def rows(page: Page, chart: str) -> int:
    return int(page.locator(chart).get_attribute("data-rows") or 0)


def with_history(r: redis.Redis, workers: Workers) -> None:
    """A worker with traffic, recording (no browser yet): a few seconds of history."""
    workers.start("chart-worker")
    for n in range(20):
        publish("demo.echo", {"n": n}, client=r, source="chart-test")
    wait_for(lambda: r.zcard(Keys().history("1s")) >= 4, timeout_s=30, what="4 recorded points")


def errors_of(page: Page) -> list[str]:
    seen: list[str] = []

    def keep(message: ConsoleMessage) -> None:
        if message.type == "error":
            seen.append(message.text)

    page.on("console", keep)
    page.on("pageerror", lambda exc: seen.append(str(exc)))
    return seen


def test_overview_chart_has_axes_updates_live_and_switches_range(
    r: redis.Redis, console: Console, browser: Browser, workers: Workers, tmp_path: Path
) -> None:
    with_history(r, workers)
    page = log_in(browser, console)
    errors = errors_of(page)
    chart = page.locator(THROUGHPUT)
    expect(chart.locator("canvas")).to_have_count(1, timeout=WAIT_MS)
    # uPlot's two axes (time and value; the unit is the value axis' label, on the canvas)
    # and the legend with every line.
    expect(chart.locator(".u-axis")).to_have_count(2)
    expect(chart.locator(".u-title")).to_have_text("Throughput")
    for line in ("added", "processed", "failed"):
        expect(chart.locator(".u-legend")).to_contain_text(line)
    expect(page.locator(BACKLOG).locator(".u-legend")).to_contain_text("agents lag")

    # Live: rows arrive with the ticks; the page is not reloaded and the chart not rebuilt,
    # although the card around it is swapped in every second.
    page.evaluate(
        f"window.kept = document.querySelector('{THROUGHPUT} canvas'); window.notReloaded = 1"
    )
    before = rows(page, THROUGHPUT)
    wait_for(lambda: rows(page, THROUGHPUT) >= before + 3, timeout_s=20, what="3 more rows")
    assert page.evaluate(f"document.querySelector('{THROUGHPUT} canvas') === window.kept")
    assert page.evaluate("window.notReloaded === 1")

    # Off the chart, the legend reads "label: newest value unit", not a row of dashes.
    legend = chart.locator(".u-legend .u-series")
    expect(legend.nth(0)).to_contain_text(re.compile(r"time \(UTC\):?\s*newest \d{4}-"))
    expect(legend.nth(2)).to_have_text(re.compile(r"^processed:?\s*[\d.]+[kM]? events/s$"))

    # Hover: the legend reads out the values under the cursor, with their unit.
    box = chart.locator(".u-over").bounding_box()
    assert box is not None
    page.mouse.move(box["x"] + box["width"] - 4, box["y"] + box["height"] / 2)
    expect(chart.locator(".u-legend .u-value").nth(2)).to_contain_text("events/s")

    for label, name in (("1 hour", "1h"), ("24 hours", "24h"), ("5 min", "5m")):
        page.get_by_role("button", name=label).click()
        expect(page.get_by_role("button", name=label)).to_have_attribute("aria-pressed", "true")
        expect(chart).to_have_attribute("data-range", name)
    # 1 s points over 5 minutes, 10 s and 1 min points over the longer ranges: fewer rows.
    page.get_by_role("button", name="24 hours").click()
    assert rows(page, THROUGHPUT) < before + 3
    page.get_by_role("button", name="5 min").click()
    screenshot(page, tmp_path / "overview-charts.png")
    assert not errors, errors  # no script error, no CSP violation


def test_first_render_shows_the_recorded_history_without_a_socket(
    r: redis.Redis, console: Console, browser: Browser, workers: Workers
) -> None:
    with_history(r, workers)
    log_in(browser, console).context.close()  # signs in; the session is per context
    page = new_page(browser, console)
    page.context.add_init_script("window.WebSocket = function () { throw new Error('off'); }")
    page.goto("/login/")
    page.fill("input[name=username]", USERNAME)
    page.fill("input[name=password]", PASSWORD)
    page.click("button[type=submit]")
    chart = page.locator(THROUGHPUT)
    expect(chart.locator("canvas")).to_have_count(1, timeout=WAIT_MS)
    assert rows(page, THROUGHPUT) >= 4
    expect(page.locator("#live-status")).not_to_have_attribute("data-state", "live")


def test_stream_and_group_pages_have_their_charts(
    r: redis.Redis, console: Console, browser: Browser, workers: Workers
) -> None:
    with_history(r, workers)
    page = log_in(browser, console)
    page.goto(STREAM_PATH)
    expect(page.locator(THROUGHPUT).locator("canvas")).to_have_count(1, timeout=WAIT_MS)
    expect(page.locator(f'[data-chart="chart:hits:stream:{STREAM}"] .u-legend')).to_contain_text(
        "hit ratio"
    )
    page.goto(f"{STREAM_PATH}groups/agents/")
    backlog = page.locator(f'[data-chart="chart:backlog:group:{STREAM}:agents"]')
    expect(backlog.locator("canvas")).to_have_count(1, timeout=WAIT_MS)
    expect(backlog.locator(".u-legend")).to_contain_text("pending")
    before = rows(page, f'[data-chart="chart:backlog:group:{STREAM}:agents"]')
    expect(backlog).not_to_have_attribute("data-rows", str(before), timeout=WAIT_MS)
