"""Chromium signed in as an operator or a viewer (``role_users``, ``browser``), and ``stuck``:
a pipeline in need of an operator, left by a real worker."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
import redis
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from playwright.sync_api import Browser, sync_playwright

from console.roles import ensure_role_groups
from tests.support.browser import CHROMIUM, PASSWORD, STREAM_PATH
from tests.support.engine import STREAM, counters, xadd
from tests.support.processes import Workers
from tests.support.wait import wait_for
from workers.core.keys import DEFAULT_GROUP

OPERATOR = "olga"
VIEWER = "victor"
DEAD = f"{STREAM}:dead"
DEAD_PATH = f"{STREAM_PATH}dead/"
GROUP_PATH = f"{STREAM_PATH}groups/{DEFAULT_GROUP}/"
ORPHAN = "gone-worker"  # read two entries, then vanished: no heartbeat
OUTAGE_KEY = "browser:outage"  # browser_agents.OUTAGE_KEY (not imported: see its docstring)


@pytest.fixture
def role_users(transactional_db: Any) -> None:
    """An operator and a viewer: plain users in the two groups, neither staff nor superuser."""
    ensure_role_groups()  # the transactional test database was flushed
    users = get_user_model().objects
    for username, group in ((OPERATOR, "operators"), (VIEWER, "viewers")):
        users.create_user(username, password=PASSWORD).groups.add(Group.objects.get(name=group))


@pytest.fixture
def browser(role_users: None) -> Iterator[Browser]:
    # The users first: Django refuses ORM calls while Playwright's event loop runs.
    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=str(CHROMIUM), headless=True)
        yield chromium
        chromium.close()


@pytest.fixture
def stuck(r: redis.Redis, workers: Workers) -> str:
    """A pipeline in need of an operator; returns the dead letter's id.

    - ``gone-worker`` read two entries and vanished: orphaned, two pending entries;
    - ``browser.flaky`` failed twice during a downstream outage and was dead-lettered by a
      real worker (``--max-deliveries 2``); the outage is over when the fixture returns.

    The worker's long claim idle time keeps the orphan's entries where they are; a failed
    delivery is still retried after ``STREAMDESK_RETRY_BASE_MS``.
    """
    r.set(OUTAGE_KEY, "the downstream service is down")
    for n in range(2):
        xadd(r, {"type": "demo.echo", "source": "browser-test", "id": f"e{n}", "data": {"n": n}})
    r.xgroup_create(STREAM, DEFAULT_GROUP, id="0")
    r.xreadgroup(DEFAULT_GROUP, ORPHAN, {STREAM: ">"}, count=2)
    xadd(r, {"type": "browser.flaky", "source": "browser-test", "id": "order-42", "data": {}})

    workers.env["STREAMDESK_AGENT_MODULES"] = "tests.e2e.browser_agents"
    workers.start("browser-worker", "--max-deliveries", "2", "--claim-idle-ms", "600000")
    wait_for(lambda: r.xlen(DEAD) == 1, what="the worker to dead-letter browser.flaky")
    r.delete(OUTAGE_KEY)
    # The letter is written before its entry is acked: wait for the ack too.
    wait_for(lambda: r.xpending(STREAM, DEFAULT_GROUP)["pending"] == 2, what="the orphan's 2 only")
    assert counters(r).get("processed", 0) == 0
    return str(r.xrange(DEAD)[0][0])
