"""Chromium under Playwright for the end-to-end console tests: signed in as staff
(``staff_user``, ``browser``), new pages, the login form, screenshots."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from playwright.sync_api import Browser, Locator, Page, ViewportSize, expect, sync_playwright

from tests.support.console_server import Console
from tests.support.engine import STREAM

# Debian's Chromium: Playwright's own browser download is not available here.
CHROMIUM = Path("/usr/bin/chromium")
USERNAME = "operator"
PASSWORD = "browser-test-password"
VIEWPORT: ViewportSize = {"width": 1280, "height": 800}
# Generous for a loaded CI machine; every wait ends as soon as its condition holds.
WAIT_MS = 20_000
STREAM_PATH = f"/streams/{STREAM}/"


@pytest.fixture
def staff_user(transactional_db: Any) -> None:
    get_user_model().objects.create_user(USERNAME, password=PASSWORD, is_staff=True)


@pytest.fixture
def browser(staff_user: None) -> Iterator[Browser]:
    # Playwright's sync API keeps its event loop running while the test runs, and Django
    # refuses ORM calls under a running loop: the user is created first (staff_user), and
    # the database is flushed only after the browser is gone (this fixture ends first).
    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=str(CHROMIUM), headless=True)
        yield chromium
        chromium.close()


def new_page(browser: Browser, console: Console) -> Page:
    context = browser.new_context(base_url=console.url, viewport=VIEWPORT)
    return context.new_page()


def log_in(browser: Browser, console: Console, username: str = USERNAME) -> Page:
    """Through the login form, as an operator would; lands on the overview."""
    page = new_page(browser, console)
    page.goto("/")
    expect(page).to_have_url(re.compile(r"/login/\?next=/$"))
    page.fill("input[name=username]", username)
    page.fill("input[name=password]", PASSWORD)
    page.click("button[type=submit]")
    expect(page).to_have_url(f"{console.url}/")
    expect(page.locator("[data-live=overview]")).to_be_visible()
    return page


def screenshot(page: Page, path: Path) -> None:
    page.screenshot(path=str(path), full_page=True)
    print(f"screenshot: {path}")


def processed(page: Page) -> Locator:
    return page.locator('[data-live="overview"] [data-metric="processed"]')
