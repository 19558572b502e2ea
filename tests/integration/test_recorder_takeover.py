"""Ten candidate recorders, each in its own process: kill the one that records (SIGKILL: no
release) and 1 s history goes on, the lease moving within its lifetime plus a standby try.
A short cadence here; tests/e2e/test_history_recorder.py does it with runworkers at the
defaults."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from itertools import pairwise
from pathlib import Path

import pytest
import redis

from tests.support.wait import wait_for
from workers.core.keys import Keys
from workers.redis.pipelines import server_ms

KEYS = Keys()
ROOT = Path(__file__).resolve().parents[2]
STANDBY_S, LEASE_TTL_MS = 1.0, 2_000
CANDIDATE = f"""
import sys, time, redis
from workers.core.keys import Keys
from workers.monitor.recorder import Cadence, start_recorder
cadence = Cadence(standby_s={STANDBY_S}, lease_ttl_ms={LEASE_TTL_MS}, keepalive_ms=900)
start_recorder(lambda: redis.Redis.from_url(sys.argv[1], decode_responses=True), Keys(),
               "candidate", cadence)
time.sleep(600)
"""


@pytest.fixture
def candidates(redis_url: str) -> Iterator[list[subprocess.Popen[bytes]]]:
    procs = [
        subprocess.Popen([sys.executable, "-c", CANDIDATE, redis_url], cwd=ROOT) for _ in range(10)
    ]
    yield procs
    for proc in procs:
        proc.kill()
        proc.wait(timeout=10)


def holder_pid(r: redis.Redis) -> int | None:
    """The pid in the lease's value (role:host:pid:nonce)."""
    holder = r.get(KEYS.history_recorder)
    return int(str(holder).rsplit(":", 2)[1]) if holder else None


def times(r: redis.Redis) -> list[int]:
    return [json.loads(m)["t"] for m in r.zrange(KEYS.history("1s"), 0, -1)]


def test_ten_candidates_kill_the_recorder_and_1s_history_goes_on(
    r: redis.Redis, candidates: list[subprocess.Popen[bytes]]
) -> None:
    wait_for(lambda: len(times(r)) >= 3, timeout_s=30, what="the first recorder's points")
    killed = holder_pid(r)
    assert killed in {proc.pid for proc in candidates}
    os.kill(killed, signal.SIGKILL)
    killed_ms = server_ms(r)
    wait_for(
        lambda: holder_pid(r) not in (killed, None),
        timeout_s=LEASE_TTL_MS / 1000 + STANDBY_S + 5,
        what="another candidate to take the lease",
    )
    wait_for(lambda: len([t for t in times(r) if t > killed_ms]) >= 3, 10, "new 1 s points")
    after = [t for t in times(r) if t > killed_ms]
    before = max(t for t in times(r) if t <= killed_ms)
    # The gap: at most the lease's lifetime and a standby's wait (plus a tick).
    assert after[0] - before <= LEASE_TTL_MS + STANDBY_S * 1000 + 1_500
    assert all(b - a <= 2_000 for a, b in pairwise(after))  # 1 s again
