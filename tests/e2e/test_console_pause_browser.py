"""Pausing a group in a real browser: one button that says what it will do, flipping between
Pause and Resume by the live push, and who paused it when, in words."""

from __future__ import annotations

import re

import pytest
import redis
from playwright.sync_api import Browser, expect

from tests.support.browser import CHROMIUM, WAIT_MS, log_in
from tests.support.console_server import Console
from tests.support.engine import STREAM, xadd
from tests.support.operators import GROUP_PATH, OPERATOR
from tests.support.operators import browser as browser
from tests.support.operators import role_users as role_users
from workers.core.keys import DEFAULT_GROUP

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(not CHROMIUM.exists(), reason=f"no Chromium at {CHROMIUM} (apt chromium)"),
]

LIVE = '[data-live^="group:"]'


def test_pause_toggle_flips_and_says_who_and_when(
    r: redis.Redis, console: Console, browser: Browser
) -> None:
    xadd(r, {"type": "demo.echo", "id": "e1", "data": {"n": 1}})
    r.xgroup_create(STREAM, DEFAULT_GROUP, id="0")
    r.sadd("streamdesk:stats:streams", STREAM)
    page = log_in(browser, console, OPERATOR)
    page.goto(GROUP_PATH)
    page.on("dialog", lambda dialog: dialog.accept())  # hx-confirm
    live = page.locator(LIVE)
    pause = live.get_by_role("button", name="Pause group")
    resume = live.get_by_role("button", name="Resume group")
    expect(pause).to_be_visible()
    expect(resume).to_have_count(0)

    pause.click()
    expect(resume).to_be_visible(timeout=WAIT_MS)  # flipped by the next push, no reload
    expect(pause).to_have_count(0)
    banner = live.locator("p.outcome", has_text="Paused")
    expect(banner).to_contain_text(re.compile(rf"by {OPERATOR} at \d\d:\d\d:\d\d UTC \("))
    expect(banner.locator("time")).to_have_attribute("datetime", re.compile(r"^\d{4}-\d\d-\d\dT"))

    resume.click()
    expect(pause).to_be_visible(timeout=WAIT_MS)
    expect(resume).to_have_count(0)
    expect(banner).to_have_count(0)
