"""History is recorded by real ``runworker`` processes with traffic and no console or
browser at all; one records, and another takes over when it stops."""

from __future__ import annotations

import json
import signal

import pytest
import redis

from tests.support.engine import STREAM
from tests.support.processes import Workers
from tests.support.wait import wait_for
from workers.core.keys import Keys
from workers.producers.publish import publish

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]

KEYS = Keys()


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
    wait_for(
        lambda: str(r.get(KEYS.history_recorder)) not in (holder, "None"),
        timeout_s=10,
        what="rec-b to take the recorder lease",
    )
    count = r.zcard(KEYS.history("1s"))
    wait_for(lambda: r.zcard(KEYS.history("1s")) >= count + 2, timeout_s=10, what="new points")
