"""Issue 32's honest edges in Chromium: a Retry now on an entry an agent is running says
where it runs, and the chart range is kept in the URL (a reload and a link keep it)."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
import redis
from playwright.sync_api import Browser, Page, expect

from tests.support.actions import hash_of
from tests.support.browser import CHROMIUM, STREAM_PATH, WAIT_MS, log_in, screenshot
from tests.support.console_server import Console
from tests.support.engine import STREAM, xadd
from tests.support.operators import GROUP_PATH, OPERATOR
from tests.support.operators import browser as browser
from tests.support.operators import role_users as role_users
from workers.core.keys import DEFAULT_GROUP, Keys

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(not CHROMIUM.exists(), reason=f"no Chromium at {CHROMIUM} (apt chromium)"),
]


def event(n: int) -> dict[str, object]:
    return {"type": "demo.echo", "source": "browser-test", "id": f"e{n}", "data": {"n": n}}


def pending(r: redis.Redis, n: int, consumer: str = "gone-worker") -> list[str]:
    """``n`` entries read by ``consumer``: pending in the default group."""
    ids = [xadd(r, event(i)) for i in range(n)]
    r.xgroup_create(STREAM, DEFAULT_GROUP, id="0")
    r.xreadgroup(DEFAULT_GROUP, consumer, {STREAM: ">"}, count=n)
    r.sadd(Keys().streams_index, STREAM)  # as the engine's counters would
    return ids


def running(r: redis.Redis, n: int, owner: str) -> None:
    """The gate record of event ``n`` as an agent running it holds it (acquire.lua)."""
    lease_until = int(time.time() * 1000) + 120_000
    mapping = {"state": "running", "owner": owner, "token": 1, "lease_until": lease_until}
    r.hset(Keys().gate(hash_of(event(n)), STREAM), mapping=mapping)  # type: ignore[arg-type]


def tick(page: Page, entry_id: str) -> None:
    page.locator(f'input[name="ids"][value="{entry_id}"]').check()


def test_retry_now_on_a_running_entry_says_where_it_runs(
    r: redis.Redis, console: Console, browser: Browser, tmp_path: Path
) -> None:
    ids = pending(r, 2)
    running(r, 0, f"worker-7/{ids[0]}")
    page = log_in(browser, console, OPERATOR)
    page.goto(GROUP_PATH)
    tick(page, ids[0])
    page.get_by_role("button", name="Retry now").click()
    outcome = page.locator("#outcome")
    expect(outcome).to_contain_text(
        "Running now on worker-7: the gate decides, nothing re-run", timeout=WAIT_MS
    )
    expect(outcome).to_contain_text("Nothing done")
    expect(outcome).not_to_contain_text("1 done")
    screenshot(page, tmp_path / "retry-running.png")
    # The event page says the same: where it runs.
    page.goto(f"{STREAM_PATH}entries/{ids[0]}/")
    expect(page.locator("[data-running]")).to_contain_text("running on worker-7")
    screenshot(page, tmp_path / "event-running.png")


def test_chart_range_is_kept_in_the_url(r: redis.Redis, console: Console, browser: Browser) -> None:
    pending(r, 1)
    page = log_in(browser, console, OPERATOR)
    page.goto(GROUP_PATH)
    page.get_by_role("button", name="1 hour").click()
    expect(page).to_have_url(f"{console.url}{GROUP_PATH}?range=1h")
    page.reload()
    expect(page.get_by_role("button", name="1 hour")).to_have_attribute("aria-pressed", "true")
    expect(page.get_by_role("button", name="5 min")).to_have_attribute("aria-pressed", "false")
    # A link to another page with charts carries it; the stream's own link in the heading.
    page.locator("h1 a").click()
    expect(page).to_have_url(f"{console.url}{STREAM_PATH}?range=1h")
    expect(page.get_by_role("button", name="1 hour")).to_have_attribute("aria-pressed", "true")
    page.get_by_role("button", name="5 min").click()
    expect(page).to_have_url(f"{console.url}{STREAM_PATH}")
    # A shared link wins over the range last chosen in this browser.
    page.goto(f"{STREAM_PATH}?range=24h")
    expect(page.get_by_role("button", name="24 hours")).to_have_attribute("aria-pressed", "true")
