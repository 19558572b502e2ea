"""Per agent in a real browser (issue 31, issue 32 item 2): a real ``runworker`` runs two
named agents of one type (each its own consumer group) and a home agent; the Agents page
lists each, a named agent's page pauses that agent alone with its button (the other keeps
running, the button flips live), and the event page shows both agents' runs side by side."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import redis
from playwright.sync_api import Browser, Page, expect

from tests.support.actions import KEYS
from tests.support.browser import CHROMIUM, WAIT_MS, log_in, screenshot
from tests.support.console_server import Console
from tests.support.engine import STREAM, xadd
from tests.support.operators import OPERATOR, VIEWER
from tests.support.operators import browser as browser
from tests.support.operators import role_users as role_users
from tests.support.processes import Workers
from tests.support.processes import workers as workers
from tests.support.wait import wait_for

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(not CHROMIUM.exists(), reason=f"no Chromium at {CHROMIUM} (apt chromium)"),
]

TICKETS = 20
TRIAGE, SUMMARISE = "agents:triage", "agents:summarise"
# Where to keep the screenshots (to look at them); unset, the test's own temp dir. A
# Path("") would be the working directory: the repo's root.
SHOTS = os.environ.get("AGENTS_FANOUT_SCREENSHOTS", "")


@pytest.fixture
def worker_env(worker_env: dict[str, str]) -> dict[str, str]:
    """The console and the workers both load the agents (the console: their types)."""
    return {**worker_env, "STREAMDESK_AGENT_MODULES": "tests.e2e.agents_fanout_agents"}


def group_counter(r: redis.Redis, group: str, name: str) -> int:
    return int(r.hget(KEYS.group_stats(STREAM, group), name) or 0)


def tickets(r: redis.Redis, first: int, count: int, type_: str = "fanout.ticket") -> None:
    # Straight onto the stream: this process's registry does not hold the agents' types.
    for n in range(first, first + count):
        xadd(r, {"type": type_, "source": "fanout-test", "id": f"{type_}/{n}", "data": {"n": n}})


def shot(page: Page, name: str, tmp_path: Path) -> None:
    screenshot(page, (Path(SHOTS) if SHOTS else tmp_path) / name)


def no_overflow(page: Page) -> None:
    """Nothing wider than the 1280 px window."""
    width = page.evaluate("document.documentElement.scrollWidth")
    assert width <= 1280, f"the page is {width} px wide"


def test_agents_fanout_page_pause_one_agent_and_runs_side_by_side(
    r: redis.Redis, console: Console, browser: Browser, workers: Workers, tmp_path: Path
) -> None:
    workers.start("fanout-worker")
    tickets(r, 1, TICKETS)
    tickets(r, 1, 1, "fanout.closed")
    wait_for(lambda: group_counter(r, TRIAGE, "processed") >= TICKETS, 30, "triage to run")
    wait_for(lambda: group_counter(r, SUMMARISE, "dead_lettered") >= 2, 30, "summarise")

    page = log_in(browser, console, OPERATOR)
    page.on("dialog", lambda dialog: dialog.accept())  # hx-confirm
    page.goto("/agents/")
    table = page.locator("[data-agents-table]")
    for name in ("triage", "summarise", "fanout.closed"):
        expect(table.locator(f'tr[data-agent="{name}"]')).to_be_visible()
    summarise = table.locator('tr[data-agent="summarise"]')
    expect(summarise.locator('[data-metric="dead_lettered"]')).to_have_text("2")
    expect(summarise.locator('[data-metric="processed"]')).to_have_text(str(TICKETS - 2))
    no_overflow(page)
    shot(page, "agents-fanout-list.png", tmp_path)

    table.get_by_role("link", name="triage").click()
    expect(page).to_have_url(f"{console.url}/agents/triage/")
    groups = page.locator("[data-agent-groups]")
    expect(groups.locator(f'tr[data-group="{TRIAGE}"] [data-metric="state"]')).to_contain_text(
        "running"
    )
    groups.get_by_role("button", name="Pause agent").click()
    # The live fragment flips the button within a tick, with who paused it.
    expect(groups.get_by_role("button", name="Resume agent")).to_be_visible(timeout=WAIT_MS)
    expect(groups.locator('[data-metric="state"]')).to_contain_text(f"paused by {OPERATOR}")
    wait_for(lambda: r.get(KEYS.paused(STREAM, TRIAGE)) is not None, 10, "the pause key")
    assert r.get(KEYS.paused(STREAM, SUMMARISE)) is None

    # Paused triage takes nothing new; summarise runs every new ticket meanwhile.
    tickets(r, TICKETS + 1, 5)
    wait_for(lambda: group_counter(r, SUMMARISE, "processed") >= TICKETS - 2 + 5, 30, "summarise")
    assert group_counter(r, TRIAGE, "processed") == TICKETS
    figures = page.locator("[data-agent-group]")
    # Not delivered to its paused group: lag, not pending.
    expect(figures.locator('[data-metric="lag"]')).to_have_text("5", timeout=WAIT_MS)
    no_overflow(page)
    shot(page, "agents-fanout-paused.png", tmp_path)

    groups.get_by_role("button", name="Resume agent").click()
    expect(groups.get_by_role("button", name="Pause agent")).to_be_visible(timeout=WAIT_MS)
    wait_for(lambda: group_counter(r, TRIAGE, "processed") >= TICKETS + 5, 30, "triage to drain")
    expect(figures.locator('[data-metric="processed"]')).to_have_text(str(TICKETS + 5))

    # The 10th ticket: triage ran it, summarise dead-lettered it; both runs side by side.
    page.goto("/runs/?agent=summarise&status=dead")
    page.locator("[data-runs] tbody tr").first.get_by_role("link").first.click()
    runs = page.locator("[data-event-runs]")
    expect(runs).to_be_visible()
    expect(runs.locator("thead th[scope=col]")).to_have_count(2)
    expect(runs).to_contain_text("cannot summarise ticket")
    expect(runs.locator('[data-metric="version"]')).to_have_text(["s1", "t1"])  # by agent
    no_overflow(page)
    shot(page, "agents-fanout-event.png", tmp_path)

    page.goto(f"/streams/{STREAM}/")
    expect(page.locator('[data-group-agent="triage"]').first).to_be_visible()
    expect(page.locator('[data-group-agent="home"]').first).to_be_visible()
    no_overflow(page)
    shot(page, "agents-fanout-stream.png", tmp_path)

    page.goto(f"/streams/{STREAM}/groups/{TRIAGE}/")
    expect(page.locator('h1 [data-group-agent="triage"]')).to_be_visible()
    no_overflow(page)
    page.goto("/runs/?agent=summarise")
    expect(page.locator('[data-runs] [data-agent="summarise"]')).to_have_count(TICKETS + 5)
    no_overflow(page)
    shot(page, "agents-fanout-runs.png", tmp_path)
    # An agent without a name: the home group's button, its type's histogram figures.
    page.goto("/agents/fanout.closed/")
    expect(page.get_by_role("button", name="Pause home group")).to_be_visible()
    expect(page.locator("[data-agent-figures]")).to_contain_text("1 total", timeout=WAIT_MS)
    no_overflow(page)
    shot(page, "agents-fanout-home-agent.png", tmp_path)
    page.goto("/")
    expect(page.locator('[data-agent-table] tr[data-agent="triage"]')).to_be_visible()
    no_overflow(page)
    shot(page, "agents-fanout-overview.png", tmp_path)

    page.goto("/workers/")  # the declared settings: a row per agent, not per type
    for name in ("triage", "summarise", "fanout.closed"):
        expect(page.locator(f'[data-agent-settings="{name}"]')).to_have_count(1)
    no_overflow(page)

    # A viewer sees the state, not the button.
    viewer = log_in(browser, console, VIEWER)
    viewer.goto("/agents/summarise/")
    expect(viewer.locator("[data-agent-groups]")).to_contain_text("running")
    expect(viewer.get_by_role("button", name="Pause agent")).to_have_count(0)
