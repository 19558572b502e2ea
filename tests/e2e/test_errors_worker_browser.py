"""The Errors page in Chromium over letters a real ``runworker`` dead-lettered: look-alike
failures of one agent are one group whose top frame is the agent's own function, and Retry
group runs them again once the outage is over (they succeed)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import redis
from playwright.sync_api import Browser, expect

from tests.support.browser import CHROMIUM, WAIT_MS, log_in, screenshot
from tests.support.console_server import Console
from tests.support.engine import STREAM, counters, xadd
from tests.support.operators import OPERATOR
from tests.support.operators import browser as browser
from tests.support.operators import role_users as role_users
from tests.support.processes import Workers
from tests.support.wait import wait_for

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(not CHROMIUM.exists(), reason=f"no Chromium at {CHROMIUM} (apt chromium)"),
]

OUTAGE_KEY = "errors:outage"  # error_agents.OUTAGE_KEY (not imported: see its docstring)
ORDERS, CARDS = 6, 3
QUEUED = re.compile(r"queued as\s+job #(\d+)\s+\((\d+) entries\)")


def test_a_real_workers_letters_grouped_and_retried(
    r: redis.Redis, workers: Workers, console: Console, browser: Browser, tmp_path: Path
) -> None:
    r.set(OUTAGE_KEY, "the order service is down")
    for n in range(ORDERS):
        xadd(
            r, {"type": "shop.order", "source": "t", "id": f"o{n}", "data": {"order_id": 9000 + n}}
        )
    for n in range(CARDS):
        xadd(r, {"type": "shop.pay", "source": "t", "id": f"p{n}", "data": {"card": 4000 + n}})
    workers.env["STREAMDESK_AGENT_MODULES"] = "tests.e2e.error_agents"
    workers.start("errors-worker", "--max-deliveries", "1")
    wait_for(lambda: r.xlen(f"{STREAM}:dead") == ORDERS + CARDS, what="the letters")

    page = log_in(browser, console, OPERATOR)
    page.goto("/errors/")
    rows = page.locator("[data-error-groups] tbody tr")
    expect(rows).to_have_count(2)
    orders = rows.first
    expect(orders.locator("[data-count]")).to_have_text(str(ORDERS))
    expect(orders).to_contain_text("tests.e2e.error_agents.load_order")
    expect(rows.nth(1)).to_contain_text("card <num> declined at <hex>")
    screenshot(page, tmp_path / "errors-real.png")

    r.delete(OUTAGE_KEY)  # the order service is back
    page.on("dialog", lambda dialog: dialog.accept())
    orders.get_by_role("button", name="Retry group").click()
    expect(page.locator("#outcome")).to_contain_text(QUEUED, timeout=WAIT_MS)
    wait_for(lambda: counters(r).get("processed", 0) == ORDERS, what="the orders to run again")
    page.goto("/errors/")
    expect(rows).to_have_count(1)
    expect(rows.first.locator("[data-count]")).to_have_text(str(CARDS))
