"""History is recorded by real ``runworker`` processes with traffic and no console or
browser at all; one records, and another takes over when it stops or is killed, at the
default cadence (workers/monitor/recorder.py: a 10 s lease, a standby's try every 10 s)."""

from __future__ import annotations

import json
import os
import signal

import pytest
import redis

from tests.support.engine import STREAM
from tests.support.processes import Workers
from tests.support.wait import wait_for
from workers.core.keys import Keys
from workers.monitor.recorder import Cadence
from workers.producers.publish import publish
from workers.redis.pipelines import server_ms

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]

KEYS = Keys()
DEFAULT = Cadence()
# A takeover's longest wait: the lease's lifetime, then a standby's next try (and a tick).
TAKEOVER_S = DEFAULT.lease_ttl_ms / 1000 + DEFAULT.standby_s + 2


def recorded(r: redis.Redis, resolution: str = "1s") -> list[dict[str, object]]:
    return [json.loads(m) for m in r.zrange(KEYS.history(resolution), 0, -1)]


def processed_in(point: dict[str, object]) -> int:
    streams = point["s"]
    assert isinstance(streams, dict)
    return int(streams.get(STREAM, {}).get("p") or 0)


def test_runworker_records_history_without_a_browser(r: redis.Redis, workers: Workers) -> None:
    workers.start("rec-a")
    for n in range(30):
        publish("demo.echo", {"n": n}, client=r, source="history-test")
    wait_for(
        lambda: any(processed_in(p) == 30 for p in recorded(r)),
        timeout_s=30,
        what="a recorded point with the 30 events processed",
    )
    assert str(r.get(KEYS.history_recorder)).startswith("runworker:")
    points = recorded(r)
    times = [int(str(p["t"])) for p in points]
    assert times == sorted(times) and len({t // 1000 for t in times}) == len(times)
    assert recorded(r, "10s") and recorded(r, "1m")  # the first point opens every resolution
    assert not r.exists(KEYS.console_broadcaster)  # no console ran


def test_a_second_worker_takes_over_recording(r: redis.Redis, workers: Workers) -> None:
    first = workers.start("rec-a")
    wait_for(lambda: r.get(KEYS.history_recorder) is not None, timeout_s=30, what="a recorder")
    workers.start("rec-b")
    wait_for(lambda: r.hlen(KEYS.worker("rec-b")) > 0, timeout_s=30, what="rec-b's heartbeat")
    holder = str(r.get(KEYS.history_recorder))
    assert holder.startswith("runworker:")
    first.send_signal(signal.SIGTERM)
    assert workers.exit_code(first, "rec-a", timeout_s=30) == 0
    # Released on the way out: rec-b takes it at its next try (within 10 s).
    wait_for(
        lambda: str(r.get(KEYS.history_recorder)) not in (holder, "None"),
        timeout_s=DEFAULT.standby_s + 2,
        what="rec-b to take the recorder lease",
    )
    count = r.zcard(KEYS.history("1s"))
    # Its first point at once; nothing changes after, so the next ones with the keepalive.
    wait_for(
        lambda: r.zcard(KEYS.history("1s")) >= count + 2,
        timeout_s=DEFAULT.keepalive_ms / 1000 + 3,
        what="new points",
    )


def holder_pid(r: redis.Redis) -> int | None:
    """The pid in the lease's value (role:host:pid:nonce)."""
    holder = r.get(KEYS.history_recorder)
    return int(str(holder).rsplit(":", 2)[1]) if holder else None


def times(r: redis.Redis) -> list[int]:
    return [int(str(p["t"])) for p in recorded(r)]


def test_ten_workers_kill_the_recorder_and_1s_history_goes_on(
    r: redis.Redis, workers: Workers
) -> None:
    """The issue's test: ten workers, the one that records history killed (no release)."""
    procs = {workers.start(f"rec-{n}").pid: n for n in range(10)}
    wait_for(lambda: holder_pid(r) in procs, timeout_s=60, what="a worker to record")
    wait_for(lambda: r.zcard(KEYS.workers_index) == 10, timeout_s=60, what="ten heartbeats")
    killed = holder_pid(r)
    assert killed is not None
    os.kill(killed, signal.SIGKILL)
    killed_ms = server_ms(r)
    wait_for(
        lambda: holder_pid(r) not in (killed, None),
        timeout_s=TAKEOVER_S,
        what="another worker to take the recorder lease",
    )
    assert holder_pid(r) in procs
    for n in range(3):  # traffic: a change a second, a point a second
        publish("demo.echo", {"n": n}, client=r, source="history-test")
        wait_for(lambda n=n: len([t for t in times(r) if t > killed_ms]) > n, 5, "a new point")
    after = [t for t in times(r) if t > killed_ms]
    before = max(t for t in times(r) if t <= killed_ms)
    assert after[0] - before <= TAKEOVER_S * 1000
