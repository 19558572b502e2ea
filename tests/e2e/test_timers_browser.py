"""The Timers page in a real browser, served by a real daphne beside a real runworker: a
schedule with its next due time and last tick, and the delayed events waiting."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
import redis
from playwright.sync_api import Browser, expect

from tests.support.actions import KEYS
from tests.support.browser import CHROMIUM, log_in, screenshot
from tests.support.browser import browser as browser
from tests.support.browser import staff_user as staff_user
from tests.support.console_server import Console
from tests.support.processes import Workers
from tests.support.wait import wait_for
from workers import publish

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(not CHROMIUM.exists(), reason=f"no Chromium at {CHROMIUM} (apt chromium)"),
]

SCHEDULES = json.dumps(
    [
        {"cron": "*/15 * * * *", "type": "demo.echo", "data": {"n": 1}, "name": "quarterly"},
        {"cron": "0 9 * * MON-FRI", "type": "demo.echo", "name": "weekday-digest"},
    ]
)


def test_timers_page_shows_schedules_and_delayed_events(
    r: redis.Redis, worker_env: dict[str, str], browser: Browser, staff_user: object, tmp_path: Path
) -> None:
    env = dict(worker_env, STREAMDESK_SCHEDULES=SCHEDULES)
    pool = Workers(env, tmp_path)
    console = Console(env, tmp_path / "daphne.log")
    try:
        pool.start("timer-worker")
        wait_for(lambda: r.exists(KEYS.worker("timer-worker")), 20, "the worker's heartbeat")
        for n in range(5):
            publish("demo.echo", {"n": n}, delay_s=900 + 60 * n)
        wait_for(lambda: bool(r.get(KEYS.timers_lease)), 20, "a timer holder")
        wait_for(console.ready, what="daphne to serve /login/")
        page = log_in(browser, console)
        page.get_by_role("link", name="Timers").click()
        expect(page).to_have_url(f"{console.url}/timers/")
        rows = page.locator("[data-schedules] tbody tr")
        expect(rows).to_have_count(2)
        expect(rows.first).to_contain_text("quarterly")
        expect(rows.first.locator("[data-next-due]")).to_contain_text("UTC (in ")
        expect(page.locator("[data-delayed] tbody tr")).to_contain_text("5")
        expect(page.locator("main")).to_contain_text("runworker:")
        screenshot(page, Path(os.environ.get("TIMERS_SCREENSHOT", tmp_path / "timers.png")))
    finally:
        console.stop()
        pool.stop_all()
