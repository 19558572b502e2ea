"""A worker's default consumer name (issue 32 item 6): ``<host>-<n>``, the lowest slot no
live worker holds, so a restart takes its old name back and no orphaned consumers pile up."""

from __future__ import annotations

import signal
from pathlib import Path

import pytest
import redis

from tests.support.engine import xadd
from tests.support.processes import start
from tests.support.wait import wait_for
from workers.core.keys import Keys
from workers.redis.consumer_names import claim_consumer_name

KEYS = Keys()


def test_the_lowest_free_slot_is_claimed_and_a_live_one_skipped(r: redis.Redis) -> None:
    assert claim_consumer_name(r, KEYS, "box") == "box-1"
    assert claim_consumer_name(r, KEYS, "box") == "box-2"
    # A live worker's heartbeat, whatever its fields (one started with --consumer box-3).
    r.hset(KEYS.worker("box-3"), mapping={"consumer": "box-3", "pid": "1"})
    assert claim_consumer_name(r, KEYS, "box") == "box-4"
    r.delete(KEYS.worker("box-1"))  # that worker exited: its name is free again
    assert claim_consumer_name(r, KEYS, "box") == "box-1"
    assert 0 < r.pttl(KEYS.worker("box-1")) <= 60_000  # a claim expires if nothing beats


@pytest.mark.django_db(transaction=True)
def test_a_restarted_worker_takes_its_name_back(
    r: redis.Redis, worker_env: dict[str, str], tmp_path: Path
) -> None:
    names: list[str] = []
    for n in range(2):
        proc = start(worker_env, tmp_path / f"w{n}.log", "runworker", "--concurrency", "2")
        try:
            xadd(r, {"type": "demo.echo", "source": "t", "id": f"e{n}", "data": {"n": n}})
            # The home group's loop (a named agent's is a consumer of its own, <name>@<agent>).
            wait_for(lambda: len(home_loops(r)) == 1, what="a heartbeat")
            names += home_loops(r)
        finally:
            proc.send_signal(signal.SIGTERM)
            assert proc.wait(timeout=30) == 0, (tmp_path / f"w{n}.log").read_text()
        wait_for(lambda: not r.zrange(KEYS.workers_index, 0, -1), what="the farewell")
    assert names[0] == names[1] and names[0].endswith("-1")
    consumers = [c["name"] for c in r.xinfo_consumers("streamdesk:events", "agents")]
    assert consumers == [names[0]]  # one consumer, not one per restart


def home_loops(r: redis.Redis) -> list[str]:
    return [name for name in r.zrange(KEYS.workers_index, 0, -1) if "@" not in name]
