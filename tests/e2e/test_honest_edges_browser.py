"""Issue 32 in Chromium: a Retry now on an entry an agent is running says where it runs, the
chart range is kept in the URL (a reload and a link keep it), and the live pending and
dead-letter tables keep the operator's ticked rows while their rows update."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
import redis
from playwright.sync_api import Browser, Page, expect

from tests.support.actions import hash_of
from tests.support.browser import CHROMIUM, STREAM_PATH, WAIT_MS, log_in, screenshot
from tests.support.console import dead_letter_fields
from tests.support.console_server import Console
from tests.support.engine import STREAM, xadd
from tests.support.operators import GROUP_PATH, OPERATOR
from tests.support.operators import browser as browser
from tests.support.operators import role_users as role_users
from workers.core.keys import DEFAULT_GROUP, Keys
from workers.engine.waits import queue_waits

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
        "running now on worker-7: the gate decides, nothing re-run", timeout=WAIT_MS
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


def hold_back(r: redis.Redis, entry_id: str, wait_ms: int) -> None:
    """Held back for a retry, as the settler does (the idle time and the due time)."""
    with r.pipeline(transaction=False) as pipe:
        pipe.xclaim(
            STREAM, DEFAULT_GROUP, "gone-worker", 0, [entry_id], idle=60_000 - wait_ms, justid=True
        )
        queue_waits(pipe, Keys(), STREAM, DEFAULT_GROUP, [entry_id], wait_ms)  # type: ignore[arg-type]
        pipe.execute()


def test_live_pending_table_keeps_ticked_rows_while_rows_update(
    r: redis.Redis, console: Console, browser: Browser, tmp_path: Path
) -> None:
    ids = pending(r, 3)
    hold_back(r, ids[1], 40_000)
    page = log_in(browser, console, OPERATOR)
    page.goto(GROUP_PATH)
    page.evaluate("window.notReloaded = true")
    rows = page.locator("#pending tbody tr[data-row]")
    expect(rows).to_have_count(3)
    tick(page, ids[0])
    tick(page, ids[2])
    page.locator('input[name="reason"]').fill("typed while it updates")
    # The countdown runs between ticks, and the retry queue shows the held-back entry.
    countdown = page.locator(f'#pending tr[data-row="{ids[1]}"] [data-due-ms]')
    first = countdown.inner_text()
    expect(countdown).not_to_have_text(first, timeout=WAIT_MS)
    queue = page.locator(f'.retry-queue tr[data-row="{ids[1]}"]')
    expect(queue).to_contain_text("1 of 5")
    # Meanwhile: one entry acked, a new one read.
    r.xack(STREAM, DEFAULT_GROUP, ids[2])
    new = xadd(r, event(9))
    r.xreadgroup(DEFAULT_GROUP, "gone-worker", {STREAM: ">"}, count=1)
    expect(page.locator(f'#pending tr[data-row="{new}"]')).to_have_count(1, timeout=WAIT_MS)
    expect(page.locator(f'#pending tr[data-row="{ids[2]}"]')).to_have_count(0)
    # The ticked row still there is still ticked; the reason typed is still there.
    expect(page.locator(f'input[name="ids"][value="{ids[0]}"]')).to_be_checked()
    expect(page.locator(f'input[name="ids"][value="{new}"]')).not_to_be_checked()
    expect(page.locator('input[name="reason"]')).to_have_value("typed while it updates")
    # An idle time moves in a kept row: its cells are updated, its box is not.
    idle = page.locator(f'#pending tr[data-row="{ids[0]}"] td.num').first
    seen = idle.inner_text()
    expect(idle).not_to_have_text(seen, timeout=WAIT_MS)
    expect(page.locator(f'input[name="ids"][value="{ids[0]}"]')).to_be_checked()
    assert page.evaluate("window.notReloaded === true")
    # The ticked row is what Retry now acts on.
    page.get_by_role("button", name="Retry now").click()
    expect(page.locator("#outcome")).to_contain_text("Retry: 1 done")
    screenshot(page, tmp_path / "live-pending.png")


def test_live_dead_letters_keep_ticked_rows_and_outcomes(
    r: redis.Redis, console: Console, browser: Browser, tmp_path: Path
) -> None:
    letters = [r.xadd(f"{STREAM}:dead", dead_letter_fields(event(n), n)) for n in range(2)]
    r.sadd(Keys().streams_index, STREAM)
    page = log_in(browser, console, OPERATOR)
    page.goto(f"{STREAM_PATH}dead/")
    rows = page.locator("#dead tbody tr[data-row]")
    expect(rows).to_have_count(2)
    tick(page, str(letters[0]))
    newer = str(r.xadd(f"{STREAM}:dead", dead_letter_fields(event(5), 5)))
    expect(rows).to_have_count(3, timeout=WAIT_MS)
    expect(rows.first).to_have_attribute("data-row", newer)  # newest first
    expect(page.locator(f'input[name="ids"][value="{letters[0]}"]')).to_be_checked()
    # A row that came in live retries in one click (htmx sends the page's CSRF token), and
    # keeps its outcome through the next pushes, though the redriven letter left the list.
    page.get_by_role("button", name=f"Retry {newer}").click()
    outcome = page.locator(f'#dead tr[data-row="{newer}"] td.row-action')
    expect(outcome).to_contain_text("Retried as", timeout=WAIT_MS)
    status = page.locator("#live-status")
    seen = status.inner_text()
    expect(status).not_to_have_text(seen, timeout=WAIT_MS)
    expect(outcome).to_contain_text("Retried as")
    r.xdel(f"{STREAM}:dead", letters[1])  # purged by someone else
    expect(rows).to_have_count(2, timeout=WAIT_MS)
    expect(page.locator(f'input[name="ids"][value="{letters[0]}"]')).to_be_checked()
    screenshot(page, tmp_path / "live-dead.png")
