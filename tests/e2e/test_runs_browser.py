"""The Runs page in a real browser, served by a real daphne beside a real runworker: the runs
the worker recorded, newest first; Older and Newer pages; filters by type and subject through
the form (kept in the URL); and a run's row leading to its event's page."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest
import redis
from playwright.sync_api import Browser, expect

from tests.support.actions import KEYS
from tests.support.browser import CHROMIUM, log_in, screenshot
from tests.support.browser import browser as browser
from tests.support.browser import staff_user as staff_user
from tests.support.console_server import Console
from tests.support.engine import STREAM
from tests.support.processes import Workers
from tests.support.wait import wait_for
from workers import publish

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(not CHROMIUM.exists(), reason=f"no Chromium at {CHROMIUM} (apt chromium)"),
]

ECHOES = 30
FAILURES = 2


def counted(r: redis.Redis, name: str) -> int:
    return int(r.hget(KEYS.stats(STREAM), name) or 0)


def test_runs_page_filters_pages_and_leads_to_the_event(
    r: redis.Redis, worker_env: dict[str, str], browser: Browser, tmp_path: Path
) -> None:
    pool = Workers(worker_env, tmp_path)
    console = Console(worker_env, tmp_path / "daphne.log")
    try:
        pool.start("runs-worker")
        for n in range(ECHOES):
            publish("demo.echo", {"n": n}, subject=f"order/{n}")
        for n in range(FAILURES):
            publish("demo.fail", {"message": f"card {n} declined"}, subject=f"order/bad-{n}")
        wait_for(lambda: counted(r, "processed") >= ECHOES, 30, "the echoes to run")
        wait_for(lambda: counted(r, "failed") >= FAILURES, 30, "the failures to be recorded")
        wait_for(console.ready, what="daphne to serve /login/")
        page = log_in(browser, console)
        page.get_by_role("link", name="Runs").click()
        expect(page).to_have_url(f"{console.url}/runs/")
        rows = page.locator("[data-runs] tbody tr")
        expect(rows).to_have_count(25)
        screenshot(page, Path(os.environ.get("RUNS_SCREENSHOT", tmp_path / "runs.png")))

        page.get_by_role("link", name="Older →").click()
        expect(page).to_have_url(re.compile(r"/runs/\?older=[0-9]+\.[0-9]+$"))
        expect(rows).to_have_count(ECHOES + FAILURES - 25)
        page.get_by_role("link", name="← Newer").click()
        expect(rows).to_have_count(25)

        page.get_by_label("Event type").fill("demo.fail")
        page.get_by_role("button", name="Filter").click()
        expect(page).to_have_url(re.compile(r"/runs/\?type=demo\.fail&"))
        expect(rows).to_have_count(FAILURES)
        expect(rows.first.locator("[data-error]")).to_contain_text("declined")
        page.get_by_label("Subject").fill("order/bad-0")  # and a second filter beside it
        page.get_by_role("button", name="Filter").click()
        expect(page).to_have_url(re.compile(r"type=demo\.fail&.*subject=order%2Fbad-0"))
        expect(rows).to_have_count(1)
        expect(rows.first.locator("[data-error]")).to_contain_text("card 0 declined")

        shot = Path(os.environ.get("RUNS_FILTERED_SCREENSHOT", tmp_path / "runs-filtered.png"))
        screenshot(page, shot)
        rows.first.locator("td a").first.click()
        expect(page).to_have_url(re.compile(r"/events/[0-9a-f]{64}/$"))
        expect(page.locator("main")).to_contain_text("demo.fail")

        page.goto("/runs/?created_from=yesterday")  # a hand-edited URL: said, not a 500
        expect(page.locator("[data-form-errors]")).to_contain_text("Enter a date and time")
        expect(page.get_by_label("Created from (UTC)")).to_be_visible()
        page.get_by_label("Created from (UTC)").fill("2026-12-06T10:00")
        page.get_by_label("Created before (UTC)").fill("2026-12-05T10:00")
        page.get_by_role("button", name="Filter").click()  # htmx: the 400 is said by the form
        expect(page.locator("[data-action-error]")).to_contain_text("must be earlier")
    finally:
        console.stop()
        pool.stop_all()
