"""The console on a real 3-master cluster, in Chromium: events dead-lettered in every
partition during an outage show up as one total, the logical stream's page lists its
partitions, "Retry all matching" on one partition's page queues a job the console runs,
``manage.py redrive --all`` on the logical stream retries the rest, and a worker then runs
each event exactly once."""

from __future__ import annotations

import re
from pathlib import Path
from urllib.parse import quote

import pytest
from playwright.sync_api import expect, sync_playwright
from redis.cluster import RedisCluster

from tests.support.browser import CHROMIUM, PASSWORD, VIEWPORT, WAIT_MS, screenshot
from tests.support.cluster import cluster as cluster
from tests.support.cluster import rc as rc
from tests.support.console_server import Console
from tests.support.operators import OPERATOR, OUTAGE_KEY
from tests.support.operators import role_users as role_users
from tests.support.processes import Workers, manage
from tests.support.wait import wait_for
from workers.core.keys import dead_stream
from workers.core.partitions import Partitions
from workers.models import AgentRun, RunStatus
from workers.redis.cluster import LocalCluster

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(not CHROMIUM.exists(), reason=f"no Chromium at {CHROMIUM} (apt chromium)"),
]

STREAM = "streamdesk:events"
LAYOUT = Partitions(STREAM, 3, tagged=True)
PER_PARTITION = 2
QUEUED = re.compile(r"queued as\s+job #(\d+)\s+\((\d+) entries\)")


@pytest.fixture
def env(worker_env: dict[str, str], cluster: LocalCluster, rc: RedisCluster) -> dict[str, str]:
    return {
        **worker_env,
        "REDIS_URL": cluster.url,
        "STREAMDESK_PARTITIONS": "3",
        "STREAMDESK_AGENT_MODULES": "tests.e2e.browser_agents",
    }


def subjects() -> list[str]:
    """``PER_PARTITION`` subjects for each partition."""
    chosen: dict[str, list[str]] = {s: [] for s in LAYOUT.streams}
    n = 0
    while any(len(v) < PER_PARTITION for v in chosen.values()):
        subject = f"order/{n}"
        if len(chosen[LAYOUT.stream_for(subject)]) < PER_PARTITION:
            chosen[LAYOUT.stream_for(subject)].append(subject)
        n += 1
    return [s for v in chosen.values() for s in v]


def dead_letters(rc: RedisCluster) -> dict[str, int]:
    return {s: int(rc.xlen(dead_stream(s))) for s in LAYOUT.streams}


def test_dead_letters_across_partitions_are_retried_from_the_console_and_the_cli(
    rc: RedisCluster, env: dict[str, str], tmp_path: Path, role_users: None
) -> None:
    rc.set(OUTAGE_KEY, "the downstream service is down")
    for subject in subjects():
        published = manage(env, "publish", "browser.flaky", "--data", "{}", "--subject", subject)
        assert published.returncode == 0, published.stderr
    pool = Workers(env, tmp_path)
    worker = pool.start("w1", "--burst", "--max-deliveries", "2")
    assert pool.exit_code(worker, "w1", 90) == 0, pool.log("w1")
    assert dead_letters(rc) == dict.fromkeys(LAYOUT.streams, PER_PARTITION)
    rc.delete(OUTAGE_KEY)

    console = Console(env, tmp_path / "daphne.log")
    try:
        wait_for(console.ready, what="daphne to serve /login/ on the cluster")
        first = LAYOUT.streams[0]
        with sync_playwright() as playwright:  # no ORM calls while its loop runs
            chromium = playwright.chromium.launch(executable_path=str(CHROMIUM))
            page = chromium.new_context(base_url=console.url, viewport=VIEWPORT).new_page()
            page.on("dialog", lambda dialog: dialog.accept())
            page.goto("/login/?next=/")
            page.fill("input[name=username]", OPERATOR)
            page.fill("input[name=password]", PASSWORD)
            page.click("button[type=submit]")
            total = page.locator('[data-metric="total-dead"]').first
            expect(total).to_have_text(str(3 * PER_PARTITION), timeout=WAIT_MS)
            # The live push (channels-redis on the cluster) reaches the page.
            expect(page.locator("#live-status")).to_contain_text("live", timeout=WAIT_MS)
            screenshot(page, tmp_path / "cluster-overview.png")

            page.get_by_role("link", name=STREAM, exact=True).first.click()
            rows = page.locator("section.card tbody tr")
            expect(rows).to_have_count(3)
            screenshot(page, tmp_path / "cluster-logical-stream.png")

            page.goto(f"/streams/{quote(first, safe=':')}/dead/")
            expect(page.locator("#dead tbody tr")).to_have_count(PER_PARTITION)
            page.get_by_text("Retry or purge every dead letter matching a filter").click()
            page.get_by_role("button", name="Retry all matching").click()
            expect(page.locator("#outcome")).to_contain_text(QUEUED, timeout=WAIT_MS)
            found = QUEUED.search(re.sub(r"\s+", " ", page.locator("#outcome").inner_text()))
            assert found and int(found.group(2)) == PER_PARTITION
            page.goto("/jobs/")
            done = page.locator(f"#job-{found.group(1)} [data-count='done']")
            expect(done).to_have_text(str(PER_PARTITION), timeout=WAIT_MS)
            chromium.close()
    finally:
        console.stop()
    assert "Traceback" not in console.output(), console.output()[-3000:]
    assert dead_letters(rc)[first] == 0

    # The command line takes the logical stream: each partition its own outcome.
    cli = manage(env, "redrive", "--all", "--reason", "the outage is over")
    assert cli.returncode == 0, cli.stderr
    assert cli.stdout.count(f"ok, {PER_PARTITION} done") == 2, cli.stdout
    assert sum(dead_letters(rc).values()) == 0

    worker = pool.start("w2", "--burst")
    assert pool.exit_code(worker, "w2", 90) == 0, pool.log("w2")
    # Two failed attempts in the outage, then one run after the retry: none ran twice.
    runs = AgentRun.objects.filter(event_type="browser.flaky")
    assert [(r.status, r.attempts) for r in runs] == [(RunStatus.SUCCEEDED, 3)] * len(subjects())
    assert sum(int(rc.xpending(s, "agents")["pending"]) for s in LAYOUT.streams) == 0
