"""Making work: probe envelopes into the stream (or the naive jobs table), preloaded or paced."""

from __future__ import annotations

import contextlib
import json
import sqlite3
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import redis

from bench.common.harness import STREAM
from bench.engine.agents import PROBE_TYPE
from workers.core.keys import EVENT_FIELD

PIPELINE_CHUNK = 1_000

# The naive worker's queue: the shape of a typical hand-rolled "jobs" table.
JOBS_SCHEMA = """
CREATE TABLE jobs (
    id INTEGER PRIMARY KEY,
    payload TEXT NOT NULL,
    status TEXT NOT NULL DEFAULT 'pending',
    result TEXT,
    finished_at REAL
);
CREATE INDEX jobs_status_id ON jobs (status, id);
"""


def envelope(tag: str, n: int, sent_ns: int) -> str:
    """The JSON a producer XADDs: a unique id per event, so every event runs once."""
    return json.dumps(
        {
            "type": PROBE_TYPE,
            "source": "bench",
            "id": f"{tag}-{n}",
            "data": {"n": n, "sent_ns": sent_ns},
        }
    )


def new_tag() -> str:
    return uuid.uuid4().hex[:12]


def preload_stream(client: redis.Redis, count: int, at_once: bool = False) -> None:
    """XADD ``count`` events in pipelined chunks (fast: this is set-up, not measured);
    ``at_once``: all in one MULTI/EXEC, so a worker already waiting sees the whole stream
    at the same moment, as one that starts after a preload does."""
    tag = new_tag()
    chunk = count if at_once else PIPELINE_CHUNK
    for start in range(0, count, max(chunk, 1)):
        with client.pipeline(transaction=at_once) as pipe:
            for n in range(start, min(start + chunk, count)):
                pipe.xadd(STREAM, {EVENT_FIELD: envelope(tag, n, time.time_ns())})
            pipe.execute()
    if client.xlen(STREAM) != count:
        raise RuntimeError(f"preload: stream has {client.xlen(STREAM)} entries, not {count}")


def create_group(client: redis.Redis, group: str) -> None:
    """A group at the stream's start, as runworker makes its own (mkstream for an empty one)."""
    client.xgroup_create(STREAM, group, id="0", mkstream=True)


def jobs_db(path: Path, count: int = 0) -> Path:
    """Create the naive worker's database (same pragmas as the project's SQLite settings)."""
    with contextlib.closing(sqlite3.connect(path)) as conn:
        conn.execute("PRAGMA journal_mode=WAL")
        conn.executescript(JOBS_SCHEMA)
        tag = new_tag()
        with conn:
            conn.executemany(
                "INSERT INTO jobs (id, payload) VALUES (?, ?)",
                ((n + 1, envelope(tag, n, time.time_ns())) for n in range(count)),
            )
    return path


@dataclass(frozen=True, slots=True)
class Pace:
    sent: int
    seconds: float
    worst_late_ms: float  # how far the publisher fell behind its schedule at worst

    @property
    def rate(self) -> float:
        return self.sent / self.seconds if self.seconds else 0.0


def paced(publish: Callable[[int], None], rate: float, count: int) -> Pace:
    """Call ``publish(n)`` at a steady ``rate``: sleep until each slot, never burst ahead.

    A late slot is published at once (not skipped), so a stall shows up as lateness.
    """
    start = time.monotonic()
    worst = 0.0
    for n in range(count):
        delay = start + n / rate - time.monotonic()
        if delay > 0:
            time.sleep(delay)
        else:
            worst = max(worst, -delay)
        publish(n)
    return Pace(count, time.monotonic() - start, worst * 1000)


class StreamPublisher:
    """One XADD per event, stamped just before the call."""

    def __init__(self, client: redis.Redis) -> None:
        self.client = client
        self.tag = new_tag()

    def __call__(self, n: int) -> None:
        self.client.xadd(STREAM, {EVENT_FIELD: envelope(self.tag, n, time.time_ns())})


class JobsPublisher:
    """One committed INSERT per event: how work reaches a polling worker's table."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn
        self.tag = new_tag()

    def __call__(self, n: int) -> None:
        with self.conn:
            self.conn.execute(
                "INSERT INTO jobs (id, payload) VALUES (?, ?)",
                (n + 1, envelope(self.tag, n, time.time_ns())),
            )
