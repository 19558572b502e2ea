"""By agent in a real browser, beside a real runworker (which records the history): the
overview's Agents table, a row followed to its agent's page, its figures and its three
charts drawn by uPlot from the recorded history and kept current by the websocket."""

from __future__ import annotations

import json
import os
import re
import time
from pathlib import Path

import pytest
import redis
from playwright.sync_api import Browser, Page, expect

from tests.support.actions import KEYS
from tests.support.browser import CHROMIUM, WAIT_MS, log_in, screenshot
from tests.support.browser import browser as browser
from tests.support.browser import staff_user as staff_user
from tests.support.console_server import Console
from tests.support.engine import STREAM
from tests.support.processes import Workers
from tests.support.processes import workers as workers
from tests.support.wait import wait_for
from workers import publish

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(not CHROMIUM.exists(), reason=f"no Chromium at {CHROMIUM} (apt chromium)"),
]

ECHOES = 40
AGENT = "demo.echo"
PART = f"agent:{AGENT}"


def counted(r: redis.Redis, name: str) -> int:
    return int(r.hget(KEYS.stats(STREAM), name) or 0)


def recorded(r: redis.Redis) -> int:
    """The newest 1 s point's processed count of the stream (0 while it is not recorded)."""
    newest = r.zrange(KEYS.history("1s"), -1, -1)
    return int(json.loads(newest[0])["s"].get(STREAM, {}).get("p", 0)) if newest else 0


def rows(page: Page, chart: str) -> int:
    return int(page.locator(chart).get_attribute("data-rows") or 0)


def test_overview_agent_row_leads_to_its_page_with_figures_and_charts(
    r: redis.Redis, console: Console, browser: Browser, workers: Workers, tmp_path: Path
) -> None:
    workers.start("agents-worker")
    publish("demo.echo", {"n": -1}, client=r, source="agents-test")
    wait_for(lambda: counted(r, "processed") >= 1, 30, "the worker to be up")
    # The recorder reads the stream names every 10 s: the stream recorded before the traffic.
    wait_for(lambda: recorded(r) >= 1, 30, "the stream's first recorded point")
    for n in range(ECHOES):  # over 4 s: several intervals of the 1 s charts have runs
        publish("demo.echo", {"n": n}, client=r, source="agents-test")
        time.sleep(4 / ECHOES)
    publish("demo.fail", {"message": "card declined"}, client=r, source="agents-test")
    wait_for(lambda: counted(r, "processed") >= ECHOES + 1, 30, "the echoes to run")
    wait_for(lambda: r.zcard(KEYS.history("1s")) >= 4, timeout_s=30, what="4 recorded points")

    page = log_in(browser, console)
    table = page.locator("[data-agent-table]")
    expect(table.locator(f'tr[data-agent="{AGENT}"]')).to_be_visible()
    expect(table.locator('tr[data-agent="demo.fail"]')).to_be_visible()
    expect(table.locator(f'tr[data-agent="{AGENT}"] [data-metric="p50"]')).to_have_text(
        re.compile(r"^[\d.]+ ms$")
    )
    shot = Path(os.environ.get("AGENTS_OVERVIEW_SCREENSHOT", tmp_path / "agents-overview.png"))
    screenshot(page, shot)

    table.get_by_role("link", name=AGENT).click()
    expect(page).to_have_url(f"{console.url}/agents/{AGENT}/")
    expect(page.locator("h1")).to_contain_text(AGENT)
    figures = page.locator("[data-agent-figures]")
    expect(figures.locator('[data-metric="runs"]')).to_have_count(0)
    expect(figures).to_contain_text(f"{ECHOES + 1} total")
    for q in ("p50", "p95", "p99"):
        expect(figures.locator(f'[data-metric="{q}"]')).to_have_text(re.compile(r"^[\d.]+ ms$"))
    expect(page.locator('[data-metric="failed_1h"]')).to_have_text("0.0%")

    titles = {"runs": "Runs", "durations": "Run duration", "tokens": "Model tokens"}
    for kind, title in titles.items():
        chart = page.locator(f'[data-chart="chart:{kind}:{PART}"]')
        expect(chart.locator("canvas")).to_have_count(1, timeout=WAIT_MS)
        expect(chart.locator(".u-title")).to_have_text(title)
    expect(page.locator(f'[data-chart="chart:durations:{PART}"] .u-legend')).to_contain_text("p99")

    # Live: more rows come with the ticks, without a reload.
    runs_chart = f'[data-chart="chart:runs:{PART}"]'
    before = rows(page, runs_chart)
    wait_for(lambda: rows(page, runs_chart) >= before + 2, timeout_s=20, what="2 more rows")
    screenshot(page, Path(os.environ.get("AGENT_SCREENSHOT", tmp_path / "agent.png")))
