"""The Waiting page in a real browser, served by a real daphne beside a real runworker: a run
waiting for an operator's decision and a sleeping one are listed; Approve publishes the
answer, the worker resumes the run, and its event page shows what the agent got; Cancel
ends the sleeping one's wait."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
import redis
from playwright.sync_api import Browser, expect

from tests.support.actions import KEYS
from tests.support.browser import CHROMIUM, WAIT_MS, log_in, screenshot
from tests.support.console_server import Console
from tests.support.engine import STREAM, xadd
from tests.support.operators import OPERATOR
from tests.support.operators import browser as browser
from tests.support.operators import role_users as role_users
from tests.support.processes import Workers
from tests.support.wait import wait_for
from workers.core.events import stored_hash

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(not CHROMIUM.exists(), reason=f"no Chromium at {CHROMIUM} (apt chromium)"),
]


def publish_raw(r: redis.Redis, event: dict[str, object]) -> str:
    """XADDed as a producer would: the test process's registry does not know these types."""
    entry_id = xadd(r, event)
    return stored_hash(r.xrange(STREAM, entry_id, entry_id)[0][1]["event"])


def test_waits_page_lists_waiting_runs_and_approve_resumes_one(
    r: redis.Redis, worker_env: dict[str, str], browser: Browser, tmp_path: Path
) -> None:
    env = dict(worker_env, STREAMDESK_AGENT_MODULES="tests.e2e.answer_agents")
    pool = Workers(env, tmp_path)
    console = Console(env, tmp_path / "daphne.log")
    try:
        pool.start("wait-worker")
        expense = publish_raw(
            r,
            {"type": "expense.submitted", "source": "hr", "id": "e-42", "data": {"expense_id": 42}},
        )
        publish_raw(
            r, {"type": "digest.due", "source": "cron", "id": "weekly", "data": {"name": "weekly"}}
        )
        wait_for(lambda: r.zcard(KEYS.waiting(STREAM)) == 2, 30, "both runs to wait")
        wait_for(console.ready, what="daphne to serve /login/")
        page = log_in(browser, console, OPERATOR)
        page.get_by_role("link", name="Waiting").click()
        expect(page).to_have_url(f"{console.url}/waits/")
        rows = page.locator("[data-waits] tbody tr")
        expect(rows).to_have_count(2)
        expect(page.locator("[data-metric=waiting-total]")).to_contain_text("2 runs waiting")
        row = page.locator(f"[data-wait='{expense}']")
        expect(row).to_contain_text("expense.decided")
        expect(row).to_contain_text("data.expense_id=42")
        expect(row.locator("[data-note]")).to_have_text("Reimburse expense 42?")
        expect(row).to_contain_text("UTC (in ")  # its timeout, an hour away
        expect(rows.filter(has_text="digest.due")).to_contain_text("sleep")
        row.get_by_label("Comment").fill("receipt checked")
        shot = Path(os.environ.get("WAITS_SCREENSHOT", tmp_path / "waits.png"))
        screenshot(page, shot)

        row.get_by_role("button", name="Approve").click()
        expect(page.locator("#outcome")).to_contain_text("approved", timeout=WAIT_MS)
        record = KEYS.wait(STREAM, expense)
        wait_for(lambda: r.hget(record, "state") == "answered", what="a worker to read it")
        answer = json.loads(r.hget(record, "answer") or "{}")
        assert answer["data"] == {
            "expense_id": 42,
            "approved": True,
            "by": OPERATOR,
            "comment": "receipt checked",
        }
        assert answer["source"] == "streamdesk/operator" and answer["door"] == "console"
        wait_for(lambda: r.hget(KEYS.gate(expense), "state") == "done", 30, "the run to end")

        page.reload()
        expect(rows).to_have_count(1)
        page.on("dialog", lambda dialog: dialog.accept())  # Cancel's hx-confirm
        rows.first.get_by_role("button", name="Cancel").click()
        expect(page.locator("#outcome")).to_contain_text("cancelled", timeout=WAIT_MS)
        expect(page.locator("#waits")).to_contain_text("No run is waiting", timeout=WAIT_MS)
        assert r.zcard(KEYS.waiting(STREAM)) == 0
        page.get_by_role("link", name="Audit", exact=True).click()
        audit = page.locator("tbody tr")
        expect(audit.nth(0)).to_contain_text("cancel")
        expect(audit.nth(1)).to_contain_text("answer")
        expect(audit.nth(1)).to_contain_text("receipt checked")
        page.goto(f"/events/{expense}/")
        expect(page.locator("main")).to_contain_text('"comment": "receipt checked"')
    finally:
        console.stop()
        pool.stop_all()
