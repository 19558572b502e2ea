"""The Errors page in Chromium (issue 32): look-alike dead letters shown as one group,
its letters on the group page, and Retry group -> a tracked job on the Jobs page -> the
group's letters back on the stream. A real daphne, real Redis, the engine's dead-letter path."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import redis
from playwright.sync_api import Browser, expect

from tests.support.browser import CHROMIUM, WAIT_MS, log_in, screenshot
from tests.support.console_server import Console
from tests.support.error_letters import STREAM, card_declined, letter, order_missing, write_letters
from tests.support.operators import OPERATOR
from tests.support.operators import browser as browser
from tests.support.operators import role_users as role_users
from tests.support.wait import wait_for
from workers.core.keys import Keys, dead_stream
from workers.redis.error_groups import read_groups

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(not CHROMIUM.exists(), reason=f"no Chromium at {CHROMIUM} (apt chromium)"),
]

KEYS = Keys()
LOOK_ALIKES = 12
QUEUED = re.compile(r"queued as\s+job #(\d+)\s+\((\d+) entries\)")


def test_errors_page_retry_group_puts_its_letters_back(
    r: redis.Redis, redis_url: str, console: Console, browser: Browser, tmp_path: Path
) -> None:
    r.sadd(KEYS.streams_index, STREAM)
    look_alikes = [letter(i, order_missing(f"ord-{i}", padding=i)) for i in range(LOOK_ALIKES)]
    others = [letter(100 + i, card_declined(4000 + i), kind="shop.pay") for i in range(2)]
    ids = write_letters(redis_url, [*look_alikes, *others])
    group = next(g for g in read_groups(r, KEYS, [STREAM]) if g.kind == "KeyError")

    page = log_in(browser, console, OPERATOR)
    page.goto("/errors/")
    row = page.locator(f'tr[data-group="{group.fingerprint}"]')
    expect(page.locator("[data-error-groups] tbody tr")).to_have_count(2)
    expect(row.locator("[data-count]")).to_have_text(str(LOOK_ALIKES))
    expect(row).to_contain_text("agents.handler")
    expect(row).to_contain_text("shop.order")
    screenshot(page, tmp_path / "errors.png")

    page.goto(f"/errors/{STREAM}/{group.fingerprint}/")
    expect(page.locator("tr[data-member]")).to_have_count(LOOK_ALIKES)
    screenshot(page, tmp_path / "error-group.png")

    page.goto("/errors/")
    page.on("dialog", lambda dialog: dialog.accept())  # "Retry all 12 dead letters ...?"
    row.get_by_role("button", name="Retry group").click()
    outcome = page.locator("#outcome")
    expect(outcome).to_contain_text(QUEUED, timeout=WAIT_MS)
    found = QUEUED.search(re.sub(r"\s+", " ", outcome.inner_text()))
    assert found, outcome.inner_text()
    job, total = found.groups()
    assert int(total) == LOOK_ALIKES

    page.goto("/jobs/")
    job_row = page.locator(f"#job-{job}")
    expect(job_row.locator('[data-count="done"]')).to_have_text(str(LOOK_ALIKES), timeout=WAIT_MS)
    wait_for(lambda: r.xlen(STREAM) == LOOK_ALIKES, what="the group's letters on the stream")
    assert sorted(f["retry_of"] for _, f in r.xrange(STREAM)) == sorted(ids[:LOOK_ALIKES])
    assert [str(i) for i, _ in r.xrange(dead_stream(STREAM))] == ids[LOOK_ALIKES:]

    page.goto("/errors/")
    expect(page.locator("[data-error-groups] tbody tr")).to_have_count(1)
    expect(page.locator(f'tr[data-group="{group.fingerprint}"]')).to_have_count(0)
