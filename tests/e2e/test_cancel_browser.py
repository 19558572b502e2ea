"""Cancelling in a real browser (issue 29, item 4): an operator cancels a running agent of a
real ``runworker`` from its event page and a waiting entry from the group page's pending
rows; both end cancelled and leave the pending list. Same setup as
test_console_actions_browser.py: daphne and runworker subprocesses, Chromium."""

from __future__ import annotations

from pathlib import Path

import pytest
import redis
from playwright.sync_api import Browser, expect

from tests.support.browser import CHROMIUM, STREAM_PATH, WAIT_MS, log_in, screenshot
from tests.support.console_server import Console
from tests.support.engine import STREAM, counters, xadd
from tests.support.operators import GROUP_PATH, OPERATOR, ORPHAN
from tests.support.operators import browser as browser
from tests.support.operators import role_users as role_users
from tests.support.operators import stuck as stuck
from tests.support.wait import wait_for
from workers.core.events import stored_hash
from workers.core.keys import DEFAULT_GROUP, Keys

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(not CHROMIUM.exists(), reason=f"no Chromium at {CHROMIUM} (apt chromium)"),
]


def pending(r: redis.Redis) -> int:
    return int(r.xpending(STREAM, DEFAULT_GROUP)["pending"])


def test_cancel_a_running_agent_from_its_event_page_and_a_pending_row(
    r: redis.Redis, console: Console, browser: Browser, stuck: str, tmp_path: Path
) -> None:
    entry_id = xadd(r, {"type": "browser.long", "source": "browser-test", "id": "l1", "data": {}})
    record = Keys().gate(stored_hash(r.xrange(STREAM, entry_id, entry_id)[0][1]["event"]))
    wait_for(lambda: r.hget(record, "state") == "running", what="the worker to start it")
    page = log_in(browser, console, OPERATOR)
    page.on("dialog", lambda dialog: dialog.accept())  # hx-confirm

    page.goto(f"{STREAM_PATH}entries/{entry_id}/")
    page.get_by_label("Reason", exact=True).fill("wrong customer")
    page.get_by_role("button", name="Cancel run").click()
    expect(page.locator("#outcome")).to_contain_text("cancel requested", timeout=WAIT_MS)
    wait_for(lambda: r.hget(record, "state") == "cancelled", what="the worker to cancel it")
    page.reload()
    expect(page.locator(".timeline")).to_contain_text("cancelled by olga: wrong customer")
    expect(page.locator(".facts .badge")).to_have_text("cancelled")
    expect(page.get_by_role("button", name="Cancel run")).to_have_count(0)
    screenshot(page, tmp_path / "cancelled-running-agent.png")
    assert pending(r) == 2  # the orphan's two, not the cancelled one

    page.goto(GROUP_PATH)
    row = page.locator("#pending tbody tr", has_text=ORPHAN).first
    row.locator("input[type=checkbox]").check()
    page.locator("#pending-form").get_by_role("button", name="Cancel", exact=True).click()
    expect(page.locator("#outcome")).to_contain_text("Cancel: 1 done", timeout=WAIT_MS)
    expect(page.locator("#pending tbody tr")).to_have_count(1, timeout=WAIT_MS)
    screenshot(page, tmp_path / "cancelled-pending-row.png")
    assert pending(r) == 1
    assert counters(r)["cancelled"] == 2
