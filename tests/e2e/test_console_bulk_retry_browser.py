"""Bulk "Retry all matching" in a real browser: the page says "queued as job #N (K entries)",
and the Jobs page shows that job with the same total, run to the end by the console's job
runner. Same setup as test_console_errors_browser.py: a real daphne, Chromium."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import redis
from playwright.sync_api import Browser, expect

from tests.support.browser import CHROMIUM, WAIT_MS, log_in, screenshot
from tests.support.console import dead_letters
from tests.support.console_server import Console
from tests.support.operators import DEAD_PATH, OPERATOR
from tests.support.operators import browser as browser
from tests.support.operators import role_users as role_users

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(not CHROMIUM.exists(), reason=f"no Chromium at {CHROMIUM} (apt chromium)"),
]

LETTERS = 3
QUEUED = re.compile(r"queued as\s+job #(\d+)\s+\((\d+) entries\)")


def test_retry_all_matching_says_queued_as_job_with_its_count(
    r: redis.Redis, console: Console, browser: Browser, tmp_path: Path
) -> None:
    dead_letters(r, LETTERS)  # written before the browser: no ORM while Playwright runs
    page = log_in(browser, console, OPERATOR)
    page.on("dialog", lambda dialog: dialog.accept())  # "Retry every dead letter ...?"
    page.goto(DEAD_PATH)
    expect(page.locator("#dead tbody tr")).to_have_count(LETTERS)
    page.get_by_text("Retry or purge every dead letter matching a filter").click()
    page.get_by_role("button", name="Retry all matching").click()

    outcome = page.locator("#outcome")
    expect(outcome).to_contain_text(QUEUED, timeout=WAIT_MS)
    found = QUEUED.search(re.sub(r"\s+", " ", outcome.inner_text()))
    assert found, outcome.inner_text()
    job, total = found.groups()
    assert int(total) == LETTERS
    expect(page.locator("#bulk-dead + [role=alert]")).to_have_count(0)  # no refusal beside it
    screenshot(page, tmp_path / "bulk-retry-queued.png")

    # The Jobs table has that job with the same total, and the runner gets through it.
    page.goto("/jobs/")
    row = page.locator(f"#job-{job}")
    expect(row.locator('[data-count="total"]')).to_have_text(str(LETTERS))
    expect(row.locator('[data-count="done"]')).to_have_text(str(LETTERS), timeout=WAIT_MS)
