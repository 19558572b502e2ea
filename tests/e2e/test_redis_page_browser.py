"""Issue 32, item 5, in Chromium: the Redis page on a private Valkey (free to CONFIG SET)
with a real worker, a stream no one trims, and the eviction policy changed while the page
is open: the warning arrives with the next reading (10 s), without a reload."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis
from playwright.sync_api import Browser, expect

from tests.support.browser import CHROMIUM, log_in, screenshot
from tests.support.browser import browser as browser
from tests.support.browser import staff_user as staff_user
from tests.support.console_server import Console
from tests.support.growth import record_growth
from tests.support.processes import Workers
from tests.support.redis_server import private
from tests.support.wait import wait_for

pytestmark = [
    pytest.mark.serial,
    pytest.mark.e2e,
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(not CHROMIUM.exists(), reason=f"no Chromium at {CHROMIUM} (apt chromium)"),
]

# A reading every 10 s, and a tick a second: the change is on the page within about 11 s.
LIVE_WAIT_MS = 40_000
DAY_MS = 86_400_000
BUSY_LOOP = "local i = 0 while i < 5000000 do i = i + 1 end return i"


@pytest.fixture
def own() -> Iterator[tuple[str, redis.Redis]]:
    server = private("valkey")
    client = redis.Redis.from_url(server.url, decode_responses=True)
    try:
        yield server.url, client
    finally:
        client.close()
        server.stop()


def untrimmed_orders(r: redis.Redis) -> None:
    """``orders``: a first entry 8 days old, a group no worker runs, and 15 minutes of
    recorded growth (the console here records nothing of its own)."""
    now = int(r.time()[0]) * 1000
    r.xadd("orders", {"event": "{}"}, id=f"{now - 8 * DAY_MS}-0")
    r.xgroup_create("orders", "billing", id="0")
    r.sadd("streamdesk:stats:streams", "orders")
    record_growth(r, "orders")


def slow_commands(url: str) -> None:
    """Two commands over the slow log's default 10 ms: a script that loops, sent from a
    connection named as a worker's and from an unnamed one."""
    for name in ("streamdesk-worker:orders-1", None):
        client = redis.Redis.from_url(url, client_name=name)
        client.eval(BUSY_LOOP, 0)
        client.close()


def test_redis_page_warns_live(
    own: tuple[str, redis.Redis],
    worker_env: dict[str, str],
    browser: Browser,
    tmp_path: Path,
) -> None:
    url, r = own
    untrimmed_orders(r)
    slow_commands(url)
    for n in range(3):
        r.xadd("streamdesk:events", {"event": f'{{"type": "demo.echo", "data": {{"n": {n}}}}}'})
    env = {**worker_env, "REDIS_URL": url, "STREAMDESK_HISTORY_RECORDER": "0"}
    workers = Workers(env, tmp_path)
    console = Console(env, tmp_path / "daphne.log")
    try:
        workers.start("redis-page-worker")
        wait_for(console.ready, what="daphne to serve /login/")
        page = log_in(browser, console)
        summary = page.locator('[data-live="redis-summary"]')
        expect(summary).to_contain_text("Valkey 8")
        expect(summary).to_contain_text("orders grows and is not trimmed")
        screenshot(page, tmp_path / "overview.png")
        page.get_by_role("link", name="Redis", exact=True).first.click()
        expect(page).to_have_url(f"{console.url}/redis/")
        panel = page.locator('[data-live="redis"]')
        expect(panel.locator('[data-growth="orders"]')).to_contain_text("no worker has trimmed it")
        expect(panel.locator('[data-metric="policy"]')).to_have_text("noeviction")
        slowlog = panel.locator('[data-metric="slowlog"]')
        expect(slowlog).to_contain_text("streamdesk-worker:orders-1")
        expect(slowlog).to_contain_text("unnamed: not Streamdesk")
        expect(slowlog).to_contain_text("EVAL local i = 0")
        screenshot(page, tmp_path / "redis.png")
        r.config_set("maxmemory", "256mb")
        r.config_set("maxmemory-policy", "allkeys-lru")
        started = time.monotonic()
        expect(panel).to_contain_text(
            "maxmemory-policy allkeys-lru can evict any key", timeout=LIVE_WAIT_MS
        )
        print(f"the warning arrived {time.monotonic() - started:.1f} s after CONFIG SET")
        expect(panel.locator('[data-metric="policy"]')).to_have_text("allkeys-lru")
        expect(panel.locator('[data-metric="maxmemory"]')).to_contain_text("of maxmemory 256.0")
        screenshot(page, tmp_path / "redis-allkeys.png")
    finally:
        console.stop()
        workers.stop_all()
