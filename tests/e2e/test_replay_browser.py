"""The Replay page in a real browser: preview first, then Start, then the job's progress in
the live jobs table, run to the end by the console's own job runner (a real daphne)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import redis
from playwright.sync_api import Browser, expect

from tests.support.browser import CHROMIUM, WAIT_MS, log_in, screenshot
from tests.support.console_server import Console
from tests.support.operators import OPERATOR
from tests.support.operators import browser as browser
from tests.support.operators import role_users as role_users
from tests.support.replay import copies, publish

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(not CHROMIUM.exists(), reason=f"no Chromium at {CHROMIUM} (apt chromium)"),
]

EVENTS = 30
QUEUED = re.compile(r"queued as\s+job #(\d+)")


def test_replay_page_previews_then_starts_a_job_the_console_runs(
    r: redis.Redis, console: Console, browser: Browser, tmp_path: Path
) -> None:
    ids = publish(r, EVENTS, type_="demo.echo")  # before the browser: no ORM while it runs
    page = log_in(browser, console, OPERATOR)
    page.on("dialog", lambda dialog: dialog.accept())  # "Replay 30 events into demo.echo?"
    page.get_by_role("link", name="Replay").click()
    expect(page).to_have_url(f"{console.url}/replay/")
    page.select_option("select[name=agent]", "demo.echo")
    page.check("input[name=force]")
    page.get_by_role("button", name="Preview").click()

    preview = page.locator("[data-replay-preview-result]")
    expect(preview).to_contain_text(f"{EVENTS} events would run", timeout=WAIT_MS)
    expect(preview).to_contain_text(f"{EVENTS} entries in range")
    expect(preview).to_contain_text("The stream reaches back to")
    screenshot(page, tmp_path / "replay-preview.png")

    page.get_by_role("button", name="Start replay").click()
    outcome = page.locator("#outcome")
    expect(outcome).to_contain_text(QUEUED, timeout=WAIT_MS)
    found = QUEUED.search(re.sub(r"\s+", " ", outcome.inner_text()))
    assert found, outcome.inner_text()
    row = page.locator(f"#job-{found.group(1)}")
    expect(row.locator('[data-count="total"]')).to_have_text(str(EVENTS), timeout=WAIT_MS)
    expect(row.locator('[data-count="done"]')).to_have_text(str(EVENTS), timeout=WAIT_MS)
    expect(row).to_contain_text("done")
    screenshot(page, tmp_path / "replay-done.png")
    assert [f["replayed_from"] for f in copies(r)] == ids
