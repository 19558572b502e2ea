"""Claiming in a real browser (issue 14 item 6): the claim control offers the live consumers
only, a claim to one moves the entry, and the group page says how many consumers the workers'
housekeeping removed. Same setup as test_console_actions_browser.py: daphne and runworker
subprocesses, Chromium."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import redis
from playwright.sync_api import Browser, expect

from tests.support.browser import CHROMIUM, log_in, screenshot
from tests.support.console_server import Console
from tests.support.engine import STREAM
from tests.support.operators import GROUP_PATH, OPERATOR, ORPHAN
from tests.support.operators import browser as browser
from tests.support.operators import role_users as role_users
from tests.support.operators import stuck as stuck
from workers.core.keys import DEFAULT_GROUP, Keys
from workers.redis.consumers import pruned_field

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(not CHROMIUM.exists(), reason=f"no Chromium at {CHROMIUM} (apt chromium)"),
]

LIVE = "browser-worker"


def test_claim_picks_a_live_consumer_and_moves_the_entry(
    r: redis.Redis, console: Console, browser: Browser, stuck: str, tmp_path: Path
) -> None:
    r.xgroup_createconsumer(STREAM, DEFAULT_GROUP, "ghost")  # a name with no process
    r.hset(Keys().stats(STREAM), pruned_field(DEFAULT_GROUP), 2)
    page = log_in(browser, console, OPERATOR)
    page.on("dialog", lambda dialog: dialog.accept())
    page.goto(GROUP_PATH)

    choice = page.locator("#pending-form select[name=consumer]")
    expect(choice.locator("option")).to_have_text(["choose a live consumer", LIVE])
    expect(page.get_by_text("2 removed by housekeeping so far")).to_be_visible()

    row = page.locator("#pending tbody tr", has_text=ORPHAN).first
    entry_id = row.locator("td.mono a").inner_text()
    row.locator("input[type=checkbox]").check()
    choice.select_option(LIVE)
    page.locator("#pending-form").get_by_role("button", name="Claim", exact=True).click()
    expect(page.locator("#outcome")).to_contain_text(re.compile(r"Claim: 1 done"))
    screenshot(page, tmp_path / "claimed-to-a-live-consumer.png")
    [owner] = r.xpending_range(STREAM, DEFAULT_GROUP, entry_id, entry_id, 1)
    assert owner["consumer"] == LIVE
    names = {c["name"] for c in r.xinfo_consumers(STREAM, DEFAULT_GROUP)}
    assert names == {LIVE, ORPHAN, "ghost"}  # the claim created no consumer
