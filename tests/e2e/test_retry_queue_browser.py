"""A real worker's retries and runs, as the console shows them (issue 32): the retry queue
lists each failed event waiting out its backoff with its error, deliveries of max and next
attempt, counting down; the event page of a running event says where and for how long."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import redis
from playwright.sync_api import Browser, expect

from tests.support.browser import CHROMIUM, STREAM_PATH, WAIT_MS, log_in, screenshot
from tests.support.console_server import Console
from tests.support.engine import STREAM, xadd
from tests.support.operators import GROUP_PATH, OPERATOR, OUTAGE_KEY
from tests.support.operators import browser as browser
from tests.support.operators import role_users as role_users
from tests.support.processes import Workers
from tests.support.wait import wait_for
from workers.core.keys import DEFAULT_GROUP, Keys

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(not CHROMIUM.exists(), reason=f"no Chromium at {CHROMIUM} (apt chromium)"),
]


def test_retry_queue_and_a_running_event_from_a_real_worker(
    r: redis.Redis, console: Console, browser: Browser, workers: Workers, tmp_path: Path
) -> None:
    r.set(OUTAGE_KEY, "the downstream service is down")
    flaky = [
        xadd(r, {"type": "browser.flaky", "source": "rq", "id": f"order-{n}", "data": {"n": n}})
        for n in range(2)
    ]
    long = xadd(r, {"type": "browser.long", "source": "rq", "id": "long-1", "data": {}})
    workers.env["STREAMDESK_AGENT_MODULES"] = "tests.e2e.browser_agents"
    workers.env["STREAMDESK_RETRY_BASE_MS"] = "45000"  # a backoff long enough to look at
    # The console's claim idle time (its default): it judges the holds by it.
    workers.start("rq-worker", "--claim-idle-ms", "60000", "--lease-ms", "20000")
    waits = Keys().waits(STREAM, DEFAULT_GROUP)
    wait_for(lambda: r.zcard(waits) >= 2, what="both flaky events held back for a retry")

    page = log_in(browser, console, OPERATOR)
    page.goto(GROUP_PATH)
    queue = page.locator(".retry-queue tbody")
    for entry_id in flaky:
        row = queue.locator(f'tr[data-row="{entry_id}"]')
        expect(row).to_contain_text("failed", timeout=WAIT_MS)
        expect(row).to_contain_text("DownstreamOutage: the downstream service is down")
        expect(row).not_to_contain_text("retry in 45000 ms")  # the next attempt says when
        expect(row).to_contain_text("1 of 5")
        expect(row).to_contain_text("browser.flaky")
    countdown = queue.locator(f'tr[data-row="{flaky[0]}"] [data-due-ms]')
    first = countdown.inner_text()
    assert re.fullmatch(r"\(in [\d.]+ s\)", first), first
    expect(countdown).not_to_have_text(first, timeout=WAIT_MS)
    expect(queue.locator(f'tr[data-row="{long}"]')).to_have_count(0)  # running, not held
    screenshot(page, tmp_path / "retry-queue.png")

    page.goto(f"{STREAM_PATH}entries/{long}/")
    running = page.locator("[data-running]")
    expect(running).to_contain_text("running on rq-worker for ")
    expect(page.locator(".facts")).not_to_contain_text("none recorded yet")
    screenshot(page, tmp_path / "event-running.png")
    r.delete(OUTAGE_KEY)
