"""The recorder at rest, on a private server whose command counts are its own: a standby costs
one command, a quiet tick one round trip of two commands a stream and no write, and a change
is recorded at the next tick after copies of the quiet seconds before it."""

from __future__ import annotations

import json
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import redis

from tests.support.wait import wait_for
from workers.core.keys import Keys, dead_stream
from workers.monitor.history import HistoryStore, to_point
from workers.monitor.recorder import Cadence, Recorder
from workers.monitor.sample import collect
from workers.redis.embedded import PrivateServer
from workers.redis.pipelines import server_ms

pytestmark = pytest.mark.serial  # counts the whole server's commands or clients

KEYS = Keys()
STREAMS = ("orders", "mail")


class CountingConnection(redis.Connection):
    """A real connection that counts what it sends: one send is one round trip."""

    sent = 0

    def send_packed_command(self, command: Any, check_health: bool = True) -> None:
        CountingConnection.sent += 1
        super().send_packed_command(command, check_health)


@pytest.fixture
def server(tmp_path: Path) -> Iterator[PrivateServer]:
    own = PrivateServer(tmp_path).start()
    yield own
    own.stop()


@pytest.fixture
def r(server: PrivateServer) -> Iterator[redis.Redis]:
    client = redis.Redis.from_url(server.url, decode_responses=True)
    for stream in STREAMS:
        client.xgroup_create(stream, "agents", id="0", mkstream=True)
        client.xadd(stream, {"n": "0"})
        client.sadd(KEYS.streams_index, stream)
    yield client
    client.close()


@pytest.fixture
def counted(server: PrivateServer) -> Iterator[redis.Redis]:
    """The recorder's own client, its round trips counted."""
    pool = redis.ConnectionPool.from_url(
        server.url, decode_responses=True, connection_class=CountingConnection
    )
    client = redis.Redis(connection_pool=pool)
    client.ping()  # connected (CLIENT SETINFO) before anything is counted
    yield client
    client.close()


def commands(r: redis.Redis) -> Counter[str]:
    """Commands run since the last call (scripts' own commands included), INFO left out."""
    stats = r.info("commandstats")
    r.config_resetstat()
    return Counter(
        {
            name.removeprefix("cmdstat_"): int(row["calls"])
            for name, row in stats.items()
            if name not in ("cmdstat_info", "cmdstat_config|resetstat")
        }
    )


def points(r: redis.Redis, resolution: str = "1s") -> list[dict[str, Any]]:
    return [json.loads(m) for m in r.zrange(KEYS.history(resolution), 0, -1)]


def test_a_standby_tick_is_one_command(r: redis.Redis, counted: redis.Redis) -> None:
    r.set(KEYS.history_recorder, "someone-else")
    commands(r)
    assert Recorder(counted, KEYS, "standby").tick() is None
    assert commands(r) == Counter({"set": 1})


def test_a_quiet_tick_is_one_round_trip_and_writes_nothing(
    r: redis.Redis, counted: redis.Redis
) -> None:
    recorder = Recorder(counted, KEYS, "holder")
    assert recorder.tick() == 3  # the first point opens every resolution
    commands(r)
    sent = CountingConnection.sent
    for _ in range(5):
        assert recorder.tick() == 0
    assert CountingConnection.sent - sent == 5
    # Two commands a stream a tick, within the lease's and the names' intervals: nothing else.
    assert commands(r) == Counter({"xinfo|stream": 5 * len(STREAMS), "hgetall": 5 * len(STREAMS)})
    assert len(points(r)) == 1


def test_the_lease_and_the_names_are_read_at_their_own_intervals(
    r: redis.Redis, counted: redis.Redis
) -> None:
    cadence = Cadence(lease_ttl_ms=900, names_s=0.5, keepalive_ms=60_000)
    recorder = Recorder(counted, KEYS, "holder", cadence)
    recorder.tick()
    commands(r)
    sent = CountingConnection.sent
    time.sleep(0.6)
    assert recorder.tick() == 0
    assert CountingConnection.sent - sent == 1  # still one round trip
    assert commands(r) == Counter(
        {"pexpire": 1, "smembers": 1, "xinfo|stream": len(STREAMS), "hgetall": len(STREAMS)}
    )
    assert int(r.pttl(KEYS.history_recorder)) > 600


def test_a_change_is_recorded_after_copies_of_the_quiet_seconds(
    r: redis.Redis, counted: redis.Redis
) -> None:
    recorder = Recorder(counted, KEYS, "holder")
    recorder.tick()
    for _ in range(3):
        time.sleep(1.0)
        assert recorder.tick() == 0
    r.xadd("orders", {"n": "1"})
    # A write: the 1 s resolution at least (10 s and 1 min too if a bucket turned meanwhile).
    assert (recorder.tick() or 0) >= 1
    first, *copies, changed = points(r)
    assert [p["s"] for p in copies] == [first["s"]] * len(copies)
    assert [p["t"] for p in copies] == [first["t"] + 1_000 * (i + 1) for i in range(len(copies))]
    # Three quiet seconds are a level a step apart up to the change: not a ramp, not a gap.
    assert len(copies) == 2 and 500 <= changed["t"] - copies[-1]["t"] <= 1_500
    assert changed["s"]["orders"]["n"] == first["s"]["orders"]["n"] + 1
    assert changed["s"]["mail"] == first["s"]["mail"]


def test_a_counter_alone_is_a_change(r: redis.Redis) -> None:
    """A failed attempt held for its backoff changes no group: its counter is read too."""
    recorder = Recorder(r, KEYS, "holder")
    recorder.tick()
    time.sleep(1.0)
    assert recorder.tick() == 0
    r.hincrby(KEYS.stats("mail"), "failed", 1)
    assert (recorder.tick() or 0) >= 1
    assert points(r)[-1]["s"]["mail"]["f"] == 1


def test_a_quiet_history_is_kept_fresh_at_the_keepalive(r: redis.Redis) -> None:
    recorder = Recorder(r, KEYS, "holder", Cadence(keepalive_ms=2_000))
    recorder.tick()
    time.sleep(1.0)
    assert recorder.tick() == 0
    time.sleep(1.0)
    assert (recorder.tick() or 0) >= 1
    first, copy, fresh = points(r)
    assert first["s"] == copy["s"] == fresh["s"]
    assert copy["t"] - first["t"] == 1_000
    assert 0 <= server_ms(r) - fresh["t"] < 1_000  # stamped with the server's clock, now


def test_a_point_its_second_refused_is_written_at_a_later_tick(r: redis.Redis) -> None:
    """The previous holder wrote in the same second (here: a second ahead, by the server's
    clock): nothing was recorded, so the next tick writes, not the keepalive 10 s on."""
    r.set(KEYS.history_recorder, "before")
    HistoryStore(r, KEYS).record({"t": server_ms(r) + 1_000, "s": {}}, "before")
    r.delete(KEYS.history_recorder)  # "before" stopped
    recorder = Recorder(r, KEYS, "holder")
    assert recorder.tick() == 0
    wait_for(lambda: (recorder.tick() or 0) >= 1, timeout_s=3, what="the point written")
    assert sorted(points(r)[-1]["s"]) == sorted(STREAMS)


def test_a_point_holds_what_a_sample_holds(r: redis.Redis) -> None:
    """The tick reads two commands a stream, not collect's dozen: the point is the same."""
    for n in range(5):
        r.xadd("orders", {"n": str(n)})
    r.xgroup_create("orders", "audit", id="$")
    r.xreadgroup("agents", "w1", {"orders": ">"}, count=3)
    r.xack("orders", "agents", r.xreadgroup("agents", "w2", {"orders": ">"}, count=1)[0][1][0][0])
    r.xadd(dead_stream("orders"), {"event": "{}"})
    r.hset(KEYS.stats("orders"), mapping={"processed": 7, "failed": 2, "deferred": 1, "busy": 4})
    r.hset(KEYS.stats("mail"), "processed", "not a number")  # garbled: zeroes that stream
    r.set("wrong-type", "a string")
    r.sadd(KEYS.streams_index, "not-created-yet", "wrong-type", dead_stream("orders"))
    assert Recorder(r, KEYS, "holder").tick() == 3
    (recorded,) = points(r)
    assert recorded["s"] == to_point(collect(r, KEYS))["s"]
    assert sorted(recorded["s"]) == ["mail", "not-created-yet", "orders", "wrong-type"]
    assert recorded["s"]["orders"]["g"] == {"agents": [2, 3, 4], "audit": [0, 0, None]}
