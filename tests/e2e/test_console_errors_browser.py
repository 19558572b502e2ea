"""What an operator is told in a real browser when an action is refused or fails, and the
one-click Retry of a single dead letter (its row, and its event's page).

htmx 2 swaps nothing for a 4xx/5xx answer: static/console/errors.js says every refusal in a
role=alert region next to the control that caused it, a request that never reached the server
as such, and an expired session in words instead of swapping the login page into the outcome.
Same setup as test_console_actions_browser.py: daphne and runworker subprocesses, Chromium."""

from __future__ import annotations

import re
from pathlib import Path
from urllib.parse import quote

import pytest
import redis
from playwright.sync_api import Browser, Page, expect

from tests.support import console_server
from tests.support.browser import CHROMIUM, WAIT_MS, log_in, screenshot
from tests.support.console_server import Console
from tests.support.engine import STREAM, counters
from tests.support.operators import DEAD, DEAD_PATH, GROUP_PATH, OPERATOR, VIEWER
from tests.support.operators import browser as browser
from tests.support.operators import role_users as role_users
from tests.support.operators import stuck as stuck
from tests.support.wait import wait_for

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(not CHROMIUM.exists(), reason=f"no Chromium at {CHROMIUM} (apt chromium)"),
]

SESSION_EXPIRED = "Your session expired: sign in again."


def accept_confirms(page: Page) -> None:
    page.on("dialog", lambda dialog: dialog.accept())


def alert_after(page: Page, selector: str) -> object:
    """The alert region errors.js puts right after a control's form."""
    return page.locator(f"{selector} + [role=alert]")


def test_each_refusal_is_said_next_to_its_control(
    console: Console, browser: Browser, stuck: str, tmp_path: Path
) -> None:
    page = log_in(browser, console, OPERATOR)
    accept_confirms(page)
    page.goto(GROUP_PATH)
    form = page.locator("#pending-form")

    # Claim with nothing selected.
    form.get_by_role("button", name="Claim", exact=True).click()
    alert = alert_after(page, "#pending-form")
    expect(alert).to_be_visible()
    expect(alert).to_contain_text("Claim: select at least one entry (tick its box)")
    expect(alert).to_contain_text("(HTTP 400)")

    # Claim without a consumer.
    page.locator("#pending tbody input[type=checkbox]").first.check()
    form.get_by_role("button", name="Claim", exact=True).click()
    expect(alert).to_have_text("Claim: choose the consumer to claim the entries to (HTTP 400)")

    # Dead-letter without a reason (after the confirmation).
    form.get_by_role("button", name="Dead-letter").click()
    expect(alert).to_have_text(
        "Dead-letter: a reason is required, it goes in the audit log (HTTP 400)"
    )
    expect(page.locator("#outcome")).to_be_empty()  # nothing was swapped where outcomes go
    screenshot(page, tmp_path / "refused-dead-letter.png")

    # Purge all matching without a reason.
    page.goto(DEAD_PATH)
    page.get_by_text("Retry or purge every dead letter matching a filter").click()
    page.get_by_role("button", name="Purge all matching").click()
    purge_alert = alert_after(page, "#bulk-dead")
    expect(purge_alert).to_be_visible()
    expect(purge_alert).to_have_text(
        "Purge all matching: a reason is required, it goes in the audit log (HTTP 400)"
    )
    expect(page.locator("#outcome")).to_be_empty()
    screenshot(page, tmp_path / "refused-purge.png")

    # The next try clears the old message: with a reason, the purge is done.
    page.get_by_label("Purge reason").fill("test data")
    page.get_by_role("button", name="Purge all matching").click()
    expect(page.locator("#outcome")).to_contain_text("queued as job #")
    expect(purge_alert).to_have_count(0)


def test_expired_session_is_said_instead_of_the_login_page(
    console: Console, browser: Browser, stuck: str
) -> None:
    page = log_in(browser, console, OPERATOR)
    page.goto(GROUP_PATH)
    page.context.clear_cookies(name="sessionid")  # the session ended (expired, or signed out)

    page.locator("#pending tbody input[type=checkbox]").first.check()
    page.get_by_role("button", name="Retry now").click()
    alert = alert_after(page, "#pending-form")
    expect(alert).to_contain_text(SESSION_EXPIRED)
    expect(alert.get_by_role("link", name="Sign in")).to_have_attribute(
        "href", f"/login/?next={quote(GROUP_PATH, safe='')}"
    )
    expect(page.locator("input[name=password]")).to_have_count(0)  # no login page swapped in
    expect(page.locator("#outcome")).to_be_empty()


def test_lost_server_and_ended_session_are_said_in_words(
    console: Console,
    browser: Browser,
    stuck: str,
    worker_env: dict[str, str],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    page = log_in(browser, console, OPERATOR)
    page.goto(GROUP_PATH)
    status = page.locator("#live-status")
    expect(status).to_have_attribute("data-state", "live", timeout=WAIT_MS)

    console.stop()
    expect(status).to_have_text(re.compile(r"^disconnected, retrying in \d+ s$"), timeout=WAIT_MS)
    expect(status).to_be_visible()
    page.locator("#pending tbody input[type=checkbox]").first.check()
    page.get_by_role("button", name="Retry now").click()
    expect(alert_after(page, "#pending-form")).to_contain_text("The console did not answer")

    # Back on the same address, but this browser's session is gone: the socket is refused.
    page.context.clear_cookies(name="sessionid")
    monkeypatch.setattr(console_server, "free_port", lambda: console.port)
    again = Console(worker_env, tmp_path / "daphne-again.log")
    try:
        wait_for(again.ready, what="daphne to serve again")
        expect(status).to_have_text("signed out: reload the page to sign in again", timeout=WAIT_MS)
        expect(status).to_be_visible()
    finally:
        again.stop()


def test_row_retry_shows_its_outcome_in_the_row(
    r: redis.Redis, console: Console, browser: Browser, stuck: str, tmp_path: Path
) -> None:
    page = log_in(browser, console, OPERATOR)
    page.goto(DEAD_PATH)
    row = page.locator("#dead tbody tr")
    expect(row).to_have_count(1)

    row.get_by_role("button", name=f"Retry {stuck}").click()
    expect(row).to_contain_text(re.compile(r"Retried as \d+-\d+"))
    new_id = row.get_by_role("link", name=re.compile(r"^\d+-\d+$")).last.inner_text()
    screenshot(page, tmp_path / "dead-letter-row-retried.png")
    assert r.xlen(DEAD) == 0
    assert r.xrange(STREAM, new_id, new_id)[0][1]["retry_of"] == stuck
    wait_for(lambda: counters(r).get("processed", 0) == 1, what="the retried event to run")
    # The row stays (the list is not reloaded), and leads to the retried entry's page.
    row.get_by_role("link", name=new_id).click()
    expect(page.locator(".facts .badge")).to_have_text(
        re.compile(r"^succeeded$", re.I), timeout=WAIT_MS
    )


def test_event_page_of_a_dead_event_retries_in_one_click(
    r: redis.Redis, console: Console, browser: Browser, stuck: str
) -> None:
    page = log_in(browser, console, OPERATOR)
    page.goto(DEAD_PATH)
    page.locator("#dead tbody tr a").first.click()
    expect(page).to_have_url(re.compile(r"/events/[0-9a-f]{64}/$"))
    actions = page.locator("main .actions")
    expect(actions.get_by_role("button", name="Force re-run")).to_be_visible()
    actions.get_by_role("button", name="Retry", exact=True).click()

    expect(page.locator("#retry-outcome")).to_contain_text(re.compile(r"Retried as \d+-\d+"))
    assert r.xlen(DEAD) == 0
    wait_for(lambda: counters(r).get("processed", 0) == 1, what="the retried event to run")
    page.reload()
    expect(page.locator(".facts .badge")).to_have_text(
        re.compile(r"^succeeded$", re.I), timeout=WAIT_MS
    )
    expect(page.locator("main .actions").get_by_role("button", name="Retry")).to_have_count(0)


def test_forbidden_and_not_found_are_said_in_the_servers_words(
    console: Console, browser: Browser, stuck: str
) -> None:
    """The same region for any status: a viewer's POST (403) and an unknown action (404),
    sent by htmx from a control on the page as a stale or hand-edited page would."""
    page = log_in(browser, console, VIEWER)
    page.goto(DEAD_PATH)
    send = "([path, source]) => htmx.ajax('POST', path, {source: source, target: '#outcome'})"
    page.evaluate(send, [f"{DEAD_PATH}act/redrive/", "#dead"])
    alert = page.locator("#dead + [role=alert]")
    expect(alert).to_have_text(
        "Forbidden: Only operators may act on streams; you may view them. (HTTP 403)"
    )

    operator = log_in(browser, console, OPERATOR)
    operator.goto(DEAD_PATH)
    operator.evaluate(send, [f"{DEAD_PATH}act/no-such-action/", "#dead"])
    # "Not found: ..." from templates/404.html; with DEBUG on, Django's page says it too.
    expect(operator.locator("#dead + [role=alert]")).to_have_text(
        re.compile(r"^[^:]+: No action 'no-such-action'\. \(HTTP 404\)$")
    )
    expect(operator.locator("#outcome")).to_be_empty()
