"""Every console page under the Content-Security-Policy in a real Chromium, as admin and viewer:
no violation, no console error, live updates still arrive, an action button still works."""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest
import redis
from django.contrib.auth import get_user_model
from playwright.sync_api import Browser, ConsoleMessage, Page, expect, sync_playwright

from tests.support.browser import CHROMIUM, VIEWPORT, WAIT_MS
from tests.support.console import member_of
from tests.support.console_server import Console
from tests.support.engine import STREAM, counters
from tests.support.processes import Workers
from tests.support.wait import wait_for
from workers.producers.publish import publish

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(not CHROMIUM.exists(), reason=f"no Chromium at {CHROMIUM} (apt chromium)"),
]

ADMIN = ("root", "csp-admin-password")
VIEWER = ("watcher", "pw-watcher")  # member_of's password
GROUP_PATH = f"/streams/{STREAM}/groups/agents/"
CONSOLE_PAGES = [
    "/",
    "/workers/",
    "/redis/",
    "/jobs/",
    "/audit/",
    "/errors/",
    f"/streams/{STREAM}/",
    GROUP_PATH,
    f"/streams/{STREAM}/dead/",
    "/agents/demo.echo/",
]
ADMIN_PAGES = [
    "/admin/",
    "/admin/auth/user/",
    "/admin/auth/group/add/",  # the two-list permission picker (SelectFilter2.js)
    "/admin/workers/agentrun/",
    "/admin/workers/auditrecord/",
    "/admin/auth/user/add/",
]
FAVICON = "/favicon.ico"
# Runs before any page script, outside the page's policy: records every violation.
COLLECT_VIOLATIONS = """
window.__violations = [];
document.addEventListener("securitypolicyviolation", (e) => {
  window.__violations.push(`${e.effectiveDirective} blocked ${e.blockedURI || "inline"} `
    + `at ${e.sourceFile}:${e.lineNumber}`);
});
"""


@dataclass
class Watched:
    page: Page
    errors: list[str] = field(default_factory=list)

    def violations(self) -> list[str]:
        return list(self.page.evaluate("window.__violations"))

    def assert_clean(self, where: str) -> None:
        assert self.violations() == [], where
        assert self.errors == [], where


@pytest.fixture
def users(transactional_db: Any) -> int:
    """The viewer's id (its admin change form is one of the pages)."""
    get_user_model().objects.create_superuser(ADMIN[0], password=ADMIN[1])
    return int(member_of(VIEWER[0], "viewers").pk)


@pytest.fixture
def browser(users: int) -> Iterator[Browser]:
    # Users first, flush after the browser is gone: Django refuses the ORM under the
    # running event loop of Playwright's sync API (see test_console_browser.py).
    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=str(CHROMIUM), headless=True)
        yield chromium
        chromium.close()


def sign_in(browser: Browser, console: Console, credentials: tuple[str, str]) -> Watched:
    context = browser.new_context(base_url=console.url, viewport=VIEWPORT)
    context.add_init_script(COLLECT_VIOLATIONS)
    watched = Watched(context.new_page())

    def on_console(message: ConsoleMessage) -> None:
        # The browser's own guess at /favicon.ico is not the page's doing.
        if message.type == "error" and not message.location.get("url", "").endswith(FAVICON):
            watched.errors.append(f"{message.text} ({message.location.get('url')})")

    watched.page.on("console", on_console)
    watched.page.on("pageerror", lambda error: watched.errors.append(str(error)))
    watched.page.on("dialog", lambda dialog: dialog.accept())  # hx-confirm
    page = watched.page
    page.goto("/login/")
    page.fill("input[name=username]", credentials[0])
    page.fill("input[name=password]", credentials[1])
    page.click("button[type=submit]")
    expect(page).to_have_url(f"{console.url}/")
    return watched


def traffic(r: redis.Redis, workers: Workers) -> str:
    """Processed events and one dead letter, so every page has rows and buttons."""
    entry_ids = [publish("demo.echo", {"n": n}, client=r, source="csp-test") for n in range(3)]
    r.xadd(STREAM, {"event": "not json"})  # undecodable: dead-lettered at once
    workers.start("csp-worker")
    wait_for(lambda: counters(r).get("processed", 0) == 3, what="three events processed")
    wait_for(lambda: r.xlen(f"{STREAM}:dead") == 1, what="one dead letter")
    return entry_ids[-1]


def visit(watched: Watched, path: str) -> None:
    page = watched.page
    response = page.goto(path)
    assert response is not None and response.ok, path
    if page.locator("[data-live]").count():
        # A push arrived over the websocket and was swapped in by htmx under the policy.
        expect(page.locator("#live-status")).to_have_attribute(
            "data-state", "live", timeout=WAIT_MS
        )
    watched.assert_clean(path)


def test_csp_console_pages_pass_as_admin(
    r: redis.Redis, console: Console, browser: Browser, workers: Workers, users: int
) -> None:
    entry_id = traffic(r, workers)
    watched = sign_in(browser, console, ADMIN)
    for path in [*CONSOLE_PAGES, f"/streams/{STREAM}/entries/{entry_id}/"]:
        visit(watched, path)
    for path in [*ADMIN_PAGES, f"/admin/auth/user/{users}/change/"]:
        visit(watched, path)


def test_csp_console_pages_pass_as_viewer(
    r: redis.Redis, console: Console, browser: Browser, workers: Workers
) -> None:
    entry_id = traffic(r, workers)
    watched = sign_in(browser, console, VIEWER)
    for path in [*CONSOLE_PAGES, f"/streams/{STREAM}/entries/{entry_id}/"]:
        visit(watched, path)


def test_csp_action_button_works(
    r: redis.Redis, console: Console, browser: Browser, workers: Workers
) -> None:
    traffic(r, workers)
    watched = sign_in(browser, console, ADMIN)
    visit(watched, GROUP_PATH)
    page = watched.page
    live = page.locator(f'[data-live="group:{STREAM}:agents"]')

    page.click("button:has-text('Pause group')")
    expect(page.locator("#outcome")).to_contain_text("Pause", timeout=WAIT_MS)
    expect(live).to_contain_text(f"Paused by {ADMIN[0]}", timeout=WAIT_MS)
    page.click("button:has-text('Resume group')")
    expect(live).not_to_contain_text("Paused by", timeout=WAIT_MS)
    watched.assert_clean("after pause and resume")


def test_csp_blocks_an_injected_inline_handler(
    r: redis.Redis, console: Console, browser: Browser
) -> None:
    page = sign_in(browser, console, VIEWER).page
    # What a stored XSS would be if escaping ever failed: markup with an inline handler.
    page.evaluate(
        """document.body.insertAdjacentHTML(
             "beforeend", '<img src="/no-such-image" onerror="window.pwned = true">')"""
    )
    page.wait_for_function("window.__violations.length > 0")
    assert re.match(r"script-src(-attr)? blocked inline", page.evaluate("window.__violations[0]"))
    assert page.evaluate("window.pwned") is None
