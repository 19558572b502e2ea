"""Issue 28, item 4: the workers page in a real browser says what the fleet costs Redis at
rest, beside the table, once the console has two readings 10 s apart."""

from __future__ import annotations

from pathlib import Path

import pytest
import redis
from playwright.sync_api import Browser, expect

from tests.support.actions import KEYS
from tests.support.browser import CHROMIUM, log_in, screenshot
from tests.support.browser import browser as browser
from tests.support.browser import staff_user as staff_user
from tests.support.console_server import Console
from tests.support.processes import Workers
from tests.support.wait import wait_for

pytestmark = [
    pytest.mark.serial,
    pytest.mark.e2e,
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(not CHROMIUM.exists(), reason=f"no Chromium at {CHROMIUM} (apt chromium)"),
]

# The console reads every 10 s and needs two readings: the figure is there within about 11 s.
FIGURE_WAIT_MS = 40_000


def test_workers_page_shows_the_fleets_cost_at_rest(
    r: redis.Redis, console: Console, browser: Browser, workers: Workers, tmp_path: Path
) -> None:
    workers.start("resting-worker")
    wait_for(lambda: r.exists(KEYS.worker("resting-worker")), 20, "the worker's heartbeat")
    page = log_in(browser, console)
    page.goto("/workers/")
    line = page.locator('[data-live="workers"] [data-metric="fleet-cost"]')
    expect(line).to_be_visible()
    figure = line.locator('[data-metric="fleet-commands-s"]')
    expect(figure).to_contain_text("commands/s", timeout=FIGURE_WAIT_MS)
    if "tot-cmds" in r.client_list()[0]:
        expect(line).to_contain_text("At rest the workers cost Redis")
        expect(line).to_contain_text("CLIENT LIST")
    else:
        expect(line).to_contain_text("from all its clients, the console's own included")
    screenshot(page, tmp_path / "workers.png")
