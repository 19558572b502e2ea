"""Screenshots of the live console for the docs: the overview, a group, the dead letters and
an event's timeline (docs/img/overview.png, group.png, dead-letters.png, event-timeline.png).

Usage, from the project root (needs Debian's Chromium at /usr/bin/chromium)::

    .venv/bin/python -m bench.screenshots              # writes docs/img/*.png
    .venv/bin/python -m bench.screenshots --out /tmp   # somewhere else

A private world like the benchmark's: its own Valkey server and SQLite file in a temp
directory, two ``runworker`` processes, ``make run``'s demo producer and daphne on free
loopback ports, with ``make run``'s engine settings (retry backoff from 1 s, 5 deliveries
before a dead letter, 60 s claim idle time). It adds ``--traffic-s`` (default 150 s) of waves
of demo traffic (about 12 events a second, a few that always fail and end as dead letters),
enough to fill half of the 5-minute charts, then photographs the overview, the group page, the
dead letters after one click on a row's Retry, and the timeline of one dead-lettered event
(the whole page). Nothing watches the console while the traffic runs: the charts show what the
workers recorded on their own. It takes about three and a half minutes.
"""

from __future__ import annotations

import argparse
import contextlib
import math
import os
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import redis
from playwright.sync_api import Page, ViewportSize, expect, sync_playwright

import workers.examples.demo.agents  # noqa: F401  (registers the demo event types for publishing)
from bench.common.harness import PYTHON, ROOT, STREAM, BenchError, log_tail, spawn, wait_until
from workers.core.keys import dead_stream
from workers.producers.publish import publish
from workers.redis.embedded import PrivateServer, free_port

CHROMIUM = "/usr/bin/chromium"
VIEWPORT: ViewportSize = {"width": 1280, "height": 800}
USERNAME, PASSWORD = "demo", "screenshots-only-password"
# Long enough to fill half of the 5-minute charts (30 s left them 90% empty).
TRAFFIC_S = 150.0
TICK_S = 0.5
FAILING_EVENTS = 3
WAIT_MS = 60_000
DEFAULT_OUT = ROOT / "docs" / "img"


@dataclass
class Traffic:
    ok: int  # events that succeed
    failing: list[str]  # entry ids of demo.fail events


@dataclass
class World:
    tmp: Path
    env: dict[str, str]
    redis: redis.Redis
    console_url: str


def run_manage(env: dict[str, str], *args: str) -> None:
    result = subprocess.run(
        [PYTHON, "manage.py", *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    if result.returncode != 0:
        raise BenchError(f"manage.py {args[0]} failed: {result.stderr.strip()[-2000:]}")


def serving(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=2) as response:
            return bool(response.status == 200)
    except (urllib.error.URLError, ConnectionError, TimeoutError):
        return False


@contextlib.contextmanager
def open_world() -> Iterator[World]:
    """Valkey, a migrated database with a staff user, two workers and daphne."""
    tmp = Path(tempfile.mkdtemp(prefix="streamdesk-screenshots-"))
    server = PrivateServer(tmp / "valkey").start()
    client = redis.Redis.from_url(server.url, decode_responses=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith("STREAMDESK_")}
    env.update(
        REDIS_URL=server.url,
        DATABASE_URL=f"sqlite:///{tmp / 'db.sqlite3'}",
        DJANGO_SETTINGS_MODULE="console.settings",
        STREAMDESK_DATA_DIR=str(tmp / "data"),
        # make run's mode: the demo agents and examples, daphne serving /static/.
        DEBUG="1",
        STREAMDESK_DEMO="1",
        # The engine's own defaults, as make run has them: no STREAMDESK_RETRY_BASE_MS or
        # STREAMDESK_MAX_DELIVERIES (a failing event is dead-lettered after 1+2+4+8 s).
        DJANGO_SUPERUSER_PASSWORD=PASSWORD,
        LOG_LEVEL="WARNING",
        PYTHONUNBUFFERED="1",
    )
    port = free_port()
    daphne = [PYTHON, "-m", "daphne", "-b", "127.0.0.1", "-p", str(port)]
    try:
        run_manage(env, "migrate", "--no-input", "-v0")
        run_manage(env, "createsuperuser", "--no-input", "--username", USERNAME, "--email", "")
        with (
            spawn([*daphne, "console.asgi:application"], env, tmp / "daphne.log", ROOT) as web,
            # Like up.py: the first worker also relays the outbox (the demo's tickets use it).
            spawn([*worker("worker-a"), "--relay"], env, tmp / "worker-a.log", ROOT),
            spawn(worker("worker-b"), env, tmp / "worker-b.log", ROOT),
            # make run's own traffic, beside the waves below (up.py's default rate).
            spawn([PYTHON, "manage.py", "demoproducer"], env, tmp / "producer.log", ROOT),
        ):
            url = f"http://127.0.0.1:{port}"

            def up() -> bool:
                if web.poll() is not None:
                    raise BenchError(f"daphne exited:\n{log_tail(tmp / 'daphne.log')}")
                return serving(f"{url}/login/")

            wait_until(up, "daphne to serve /login/", timeout_s=30, interval_s=0.1)
            yield World(tmp, env, client, url)
    finally:
        client.close()
        server.stop()
        shutil.rmtree(tmp, ignore_errors=True)


def worker(name: str) -> list[str]:
    return [PYTHON, "manage.py", "runworker", "--consumer", name, "--concurrency", "16"]


def send_traffic(client: redis.Redis, traffic_s: float) -> Traffic:
    """Waves of echo events with some slow ones, and a few that always fail, over
    ``traffic_s`` seconds, so the charts have a shape."""
    ticks = int(traffic_s / TICK_S)
    fail_at = {ticks * (i + 1) // (FAILING_EVENTS + 1) for i in range(FAILING_EVENTS)}
    traffic = Traffic(ok=0, failing=[])
    for tick in range(ticks):
        started = time.monotonic()
        wave = round(5 + 4 * math.sin(tick / 6))
        for n in range(wave):
            publish("demo.echo", {"n": n, "tick": tick}, client=client, source="shop")
        publish("demo.sleep", {"ms": 50 + 40 * (tick % 7)}, client=client, source="mailer")
        traffic.ok += wave + 1
        if tick in fail_at:
            message = "upstream returned 503"
            entry = publish("demo.fail", {"message": message}, client=client, source="billing")
            traffic.failing.append(entry)
        time.sleep(max(TICK_S - (time.monotonic() - started), 0))
    return traffic


def log_in(page: Page, url: str) -> None:
    page.goto(f"{url}/")
    page.fill("input[name=username]", USERNAME)
    page.fill("input[name=password]", PASSWORD)
    page.click("button[type=submit]")
    expect(page).to_have_url(f"{url}/")


def live_now(page: Page) -> None:
    """Wait for the page's first websocket tick, so it shows live figures, not the render's."""
    expect(page.locator('#live-status[data-state="live"]')).to_be_visible(timeout=WAIT_MS)


def take(out: Path, traffic_s: float) -> None:
    out.mkdir(parents=True, exist_ok=True)
    with open_world() as world, sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, headless=True)
        page = browser.new_page(viewport=VIEWPORT)
        traffic = send_traffic(world.redis, traffic_s)
        log_in(page, world.console_url)

        live = page.locator('[data-live="overview"]')
        # The demo producer fails some events of its own: at least the waves' ones.
        wait_until(
            lambda: world.redis.xlen(dead_stream(STREAM)) >= len(traffic.failing),
            "the failing events to be dead-lettered",
            timeout_s=WAIT_MS / 1000,
        )
        expect(live.locator('[data-metric="processed"]')).not_to_have_text("0", timeout=WAIT_MS)
        live_now(page)
        page.screenshot(path=str(out / "overview.png"))

        page.goto(f"{world.console_url}/streams/{STREAM}/groups/agents/")
        expect(page.locator('[data-metric="oldest"]').first).to_be_visible()
        live_now(page)
        page.screenshot(path=str(out / "group.png"))

        page.goto(f"{world.console_url}/streams/{STREAM}/dead/")
        page.locator("td.row-action button").first.click()  # one row's own Retry
        expect(page.get_by_text("Retried as").first).to_be_visible(timeout=WAIT_MS)
        page.screenshot(path=str(out / "dead-letters.png"))

        page.goto(f"{world.console_url}/streams/{STREAM}/entries/{traffic.failing[0]}/")
        expect(page.locator("ol.timeline li.kind-dead_lettered")).to_be_visible()
        # Five deliveries make a timeline taller than the window: the whole page.
        page.screenshot(path=str(out / "event-timeline.png"), full_page=True)
        browser.close()
    print(f"wrote overview.png, group.png, dead-letters.png and event-timeline.png to {out}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.screenshots", description=__doc__)
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="folder for the PNGs")
    parser.add_argument(
        "--traffic-s", type=float, default=TRAFFIC_S, help="seconds of traffic (default 150)"
    )
    args = parser.parse_args(argv)
    if not Path(CHROMIUM).exists():
        print(f"no Chromium at {CHROMIUM}: apt-get install chromium", file=sys.stderr)
        return 2
    take(args.out, args.traffic_s)
    return 0


if __name__ == "__main__":
    sys.exit(main())
