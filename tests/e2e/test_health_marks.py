"""Health marks against real workers: ordinary trouble-free traffic raises none, and workers
that stop raise one (issue 14: "a red alarm that is not real trouble is a bug").

The traffic is what made the console cry wolf: events that fail and are retried with a
backoff (held as an idle time), duplicates that wait on their twin's lease, and events that
end as dead letters. Workers run with a 1.5 s claim idle time, so every held entry is
reclaimable many times over during the test, the way a backoff ends in production."""

from __future__ import annotations

import itertools
import threading
import time
from collections import Counter
from collections.abc import Iterator

import pytest
import redis

from console.live import health
from tests.support.processes import Workers
from tests.support.wait import wait_for
from workers.core.keys import DEFAULT_STREAM, Keys
from workers.monitor.sample import Sample, collect
from workers.producers.publish import publish

pytestmark = pytest.mark.django_db(transaction=True)

CLAIM_IDLE_MS = 1500  # tests/e2e/conftest.py TIMINGS
SAMPLES = 60
KEYS = Keys()


class Traffic:
    """Publishes, every 50 ms: a good event, a failing one, a duplicate of a good one, and a
    pair of twins that hold each other up on the gate."""

    def __init__(self, r: redis.Redis) -> None:
        self.r = r
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.published = 0

    def _run(self) -> None:
        for n in itertools.count():
            if self.stop.is_set():
                return
            publish("demo.echo", {"message": f"ok {n}"}, client=self.r, id=f"echo-{n}")
            publish("demo.fail", {"message": f"boom {n}"}, client=self.r, id=f"fail-{n}")
            publish("demo.echo", {"message": f"ok {n}"}, client=self.r, id=f"echo-{n}")
            for _ in range(2):
                publish("demo.sleep", {"ms": 300}, client=self.r, id=f"twin-{n}")
            self.published += 5
            time.sleep(0.05)

    def __enter__(self) -> Traffic:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        self.thread.join(timeout=10)


@pytest.fixture
def traffic(r: redis.Redis) -> Iterator[Traffic]:
    with Traffic(r) as t:
        yield t


def marks(sample: Sample) -> list[str]:
    stream = sample.stream(DEFAULT_STREAM)
    assert stream is not None
    mark = health.stream_health(stream, CLAIM_IDLE_MS)
    return [] if mark.level == "ok" else [f"{mark.level}: {r}" for r in mark.reasons]


def live_workers(r: redis.Redis, n: int) -> None:
    wait_for(lambda: len(collect(r, KEYS).workers) == n, 30, f"{n} live workers")


@pytest.mark.serial  # judges liveness by the second: not beside other tests' load
def test_failures_retries_and_duplicates_raise_no_mark(
    r: redis.Redis, workers: Workers, traffic: Traffic
) -> None:
    workers.start("w1", "--max-deliveries", "3")
    workers.start("w2", "--max-deliveries", "3")
    live_workers(r, 2)
    seen: list[list[str]] = []
    states: Counter[str] = Counter()
    for _ in range(SAMPLES):
        sample = collect(r, KEYS)
        seen.append(marks(sample))
        g = sample.group(DEFAULT_STREAM, "agents")
        assert g is not None
        state = health.oldest_pending(g, sample.at_ms, CLAIM_IDLE_MS)
        states[state.kind if state else "none"] += 1
        time.sleep(0.5)
    counters = collect(r, KEYS).stream(DEFAULT_STREAM).counters  # type: ignore[union-attr]
    # The traffic did what it is here for: failures, retries, dead letters and duplicates.
    assert counters["failed"] > 0 and counters["dead_lettered"] > 0
    assert counters["idempotency_hits"] > 0 and counters["processed"] > 0
    assert [m for m in seen if m] == [], f"false marks in {sum(1 for m in seen if m)} samples"
    # A held-back oldest entry is said to be waiting, never stuck.
    assert states["stuck"] == 0, states
    assert states["waiting"] > 0, states


def test_workers_that_stop_raise_the_mark(
    r: redis.Redis, workers: Workers, traffic: Traffic
) -> None:
    procs = [workers.start("w1"), workers.start("w2")]
    live_workers(r, 2)
    assert marks(collect(r, KEYS)) == []
    for proc in procs:
        proc.kill()  # dead mid-work: their entries stay pending, nobody reclaims them
    for proc in procs:
        proc.wait(timeout=10)

    def marked() -> bool:
        # "bad: agents: no live consumer ...", with the group's name when there are several.
        return any(
            m.startswith("bad: ") and "no live consumer to take" in m
            for m in marks(collect(r, KEYS))
        )

    # A heartbeat lives three beats (6 s): the mark follows within that.
    wait_for(marked, 20, "the no-live-consumer mark")
