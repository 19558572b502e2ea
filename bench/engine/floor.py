"""The floor: the least work per event that the issue asks of runworker, in the least code.

Run as its own process:
``python -m bench.engine.floor --url ... --stream ... --group ... --database URL``, where URL
is ``sqlite:///<path>`` or ``postgres://...`` (a migrated streamdesk database either way).
One thread, synchronous, one batch at a time; it drains the stream and exits at the first
empty read (or on SIGTERM); with ``--latency`` it waits for more until SIGTERM, for the
pickup runs (the clock as the probe agent's: sent by the publisher, started after the
gate). Per batch of ``XREADGROUP COUNT 200`` (redis-py with hiredis):

1. each entry is decoded and checked with the engine's own envelope decoder
   (``workers.core.events.decode_envelope``), hashed (``event_hash``) and its data validated
   with the probe's schema (``ProbeData``);
2. the idempotency gate: one pipeline of ``SET <gate key> running NX PX <lease>``, one per
   event (one round trip); only events whose SET succeeded run (``probe_result``, the clock
   taken just before, as the probe agent does);
3. the duplicate check in the database, the gate's authority once a gate key has expired:
   one query per batch for the hashes that passed the gate (``= ANY(%b)`` on PostgreSQL,
   ``IN (...)`` on SQLite, both on ``workers_agentrun``'s unique index), before any runs;
4. the database record: one ``succeeded`` row per run event in runworker's own
   ``workers_agentrun`` table (the migrated schema, all its indexes), one transaction per
   batch:

   * SQLite: a plain INSERT by ``executemany`` with ``sqlite3`` between BEGIN and COMMIT
     (WAL, synchronous=NORMAL, as runworker's connection);
   * PostgreSQL: the batch's rows in one statement, ``INSERT ... SELECT FROM unnest(...)``
     of one array per column in psycopg's binary format, bound on the server, sent in
     autocommit mode, so the statement is its own transaction (one round trip). The
     server's defaults apply, ``synchronous_commit`` on included: the commit waits for
     its WAL to be flushed, as runworker's does;
5. one pipeline: ``SET <gate key> done EX <ttl>`` per run event and one ``XACK`` of the
   batch (one round trip).

What it leaves out, all of which runworker does: concurrency (no asyncio, no handler
tasks, no database thread), an atomic Lua gate with lease tokens and fencing, the
timeline, retries, dead-lettering, reclaiming, heartbeats, stats, and any handling of a bad
event (one stops the process). Django is not imported: the row is written by hand.

Why it is the floor: every step above is something the issue requires for each event
(decode and validate, an idempotency gate in Redis, a duplicate check and a durable record
in the database, an ack), done with two Redis round trips, one query and one transaction
per batch and nothing else. Another worker doing that
work in one Python process could shave constant factors (a multi-row INSERT, a faster JSON
parser) but not drop a step, so ``floor / raw`` is about the most of the raw loop such a
worker reaches, and ``runworker / floor`` is how much of it the engine keeps.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import signal
import sqlite3
import threading
import time
from datetime import UTC, datetime
from pathlib import Path
from types import FrameType
from typing import Any, cast

import redis

from bench.engine.agents import ProbeData, probe_result
from workers.core.config import EngineConfig
from workers.core.events import decode_envelope, event_hash
from workers.core.keys import EVENT_FIELD, Keys

COUNT = 200  # the raw loop's batch, and runworker's --batch-size in the benchmark
CONSUMER = "floor-1"
_DEFAULTS = EngineConfig(consumer=CONSUMER)
LEASE_MS = _DEFAULTS.lease_ms  # runworker's defaults for the gate's lease and record
DONE_TTL_S = _DEFAULTS.done_ttl_s
KEYS = Keys(_DEFAULTS.prefix)

# Every NOT NULL column of workers_agentrun gets a value; no lease token (no fencing here).
# A row's values, in the order the run loop builds them: hash, type, id, source, subject,
# entry id, started, finished, duration, result, stream, consumer (created_at = started).
FIELDS = ("h", "t", "i", "s", "sub", "e", "sa", "fi", "d", "r", "st", "c")
TYPES = ["text"] * 6 + ["timestamptz"] * 2 + ["float8", "jsonb", "text", "text"]
HEAD = """
INSERT INTO workers_agentrun (
    event_hash, event_type, event_id, source, subject, stream, entry_id, status, attempts,
    deliveries, lease, fence, consumer, created_at, started_at, finished_at, duration_ms,
    result, error, llm_calls, prompt_tokens, completion_tokens, cost_usd
)"""
ROW = (
    "{h}, {t}, {i}, {s}, {sub}, {st}, {e}, 'succeeded', 1, 1, '', '', {c}, {sa}, {sa}, {fi}, "
    "{d}, {r}, '', 0, 0, 0, 0.0"
)
# SQLite: numbered parameters of one row; PostgreSQL: one array per field, unnested.
SQLITE_INSERT = f"{HEAD} VALUES ({ROW.format(**{f: f'?{n}' for n, f in enumerate(FIELDS, 1)})})"
POSTGRES_INSERT = (
    f"{HEAD} SELECT {ROW.format(**{f: f for f in FIELDS})} "
    f"FROM unnest({', '.join(f'%b::{t}[]' for t in TYPES)}) AS u({', '.join(FIELDS)})"
)

# Which of a batch's hashes already succeeded: runworker's duplicate check before a start.
# The status is checked here, not in SQL: with it there, both planners chose the status
# index and scanned every succeeded row (the floor fell to a tenth of its rate).
DONE_SQL = "SELECT event_hash, status FROM workers_agentrun WHERE event_hash"
SUCCEEDED = "succeeded"

stopping = threading.Event()


def on_sigterm(signum: int, frame: FrameType | None) -> None:
    stopping.set()


class SqliteRecord:
    """Step 3 on SQLite: ``executemany`` of the batch's rows between BEGIN and COMMIT."""

    def __init__(self, path: Path) -> None:
        # Autocommit mode, so the BEGIN/COMMIT below are the only transaction boundaries.
        self.conn = sqlite3.connect(path, timeout=30, isolation_level=None)
        # The same pragmas as runworker's connection (console/settings.py).
        self.conn.execute("PRAGMA journal_mode=WAL")
        self.conn.execute("PRAGMA synchronous=NORMAL")
        self.conn.execute("PRAGMA wal_autocheckpoint=10000")

    @staticmethod
    def result(value: dict[str, Any]) -> str:
        return json.dumps(value)

    @staticmethod
    def time(ns: int) -> str:
        """A UTC time as Django's SQLite backend stores it (naive, space-separated)."""
        return str(datetime.fromtimestamp(ns / 1e9, UTC).replace(tzinfo=None))

    def done_among(self, hashes: list[str]) -> set[str]:
        marks = ", ".join("?" * len(hashes))
        found = self.conn.execute(f"{DONE_SQL} IN ({marks})", hashes).fetchall()
        return {h for h, status in found if status == SUCCEEDED}

    def write(self, rows: list[tuple[Any, ...]]) -> None:
        self.conn.execute("BEGIN")
        self.conn.executemany(SQLITE_INSERT, rows)
        self.conn.execute("COMMIT")

    def close(self) -> None:
        self.conn.close()


class PostgresRecord:
    """Step 3 on PostgreSQL: one ``INSERT ... SELECT FROM unnest`` statement per batch."""

    def __init__(self, url: str) -> None:
        import psycopg  # only here: a SQLite run needs no driver
        from psycopg.types.json import Jsonb

        self.conn = psycopg.connect(url, autocommit=True)
        self.result = Jsonb  # a result as psycopg sends jsonb

    @staticmethod
    def time(ns: int) -> datetime:
        return datetime.fromtimestamp(ns / 1e9, UTC)

    def done_among(self, hashes: list[str]) -> set[str]:
        found = self.conn.execute(f"{DONE_SQL} = ANY(%b)", [hashes]).fetchall()
        return {h for h, status in found if status == SUCCEEDED}

    def write(self, rows: list[tuple[Any, ...]]) -> None:
        if rows:  # autocommit: the one statement is the batch's transaction
            self.conn.execute(POSTGRES_INSERT, [list(c) for c in zip(*rows, strict=True)])

    def close(self) -> None:
        self.conn.close()


def record(database: str) -> SqliteRecord | PostgresRecord:
    if database.startswith("sqlite:///"):
        return SqliteRecord(Path(database.removeprefix("sqlite:///")))
    if database.startswith(("postgres://", "postgresql://")):
        return PostgresRecord(database)
    raise SystemExit(f"--database: expected sqlite:///<path> or postgres://..., not {database!r}")


def run(
    url: str,
    stream: str,
    group: str,
    database: str,
    out: Path,
    deadline: float,
    ready: Path,
    wait: bool = False,
) -> int:
    client = redis.Redis.from_url(url, decode_responses=True, socket_timeout=30)
    client.ping()
    db = record(database)
    ready.touch()
    done = 0
    with contextlib.closing(client), contextlib.closing(db):
        while not stopping.is_set() and time.monotonic() < deadline:
            # RESP2 reply: [[stream, [(id, fields), ...]]], or None after BLOCK times out.
            reply = cast(
                "list[Any] | None",
                client.xreadgroup(group, CONSUMER, {stream: ">"}, count=COUNT, block=100),
            )
            entries: list[tuple[str, dict[str, str]]] = reply[0][1] if reply else []
            if not entries:
                if wait:
                    continue
                break
            events = []
            for entry_id, fields in entries:
                envelope = decode_envelope(fields[EVENT_FIELD])
                data = ProbeData.model_validate(envelope.data)
                events.append((entry_id, envelope, event_hash(envelope), data))
            with client.pipeline(transaction=False) as pipe:
                for _, _, digest, _ in events:
                    pipe.set(KEYS.gate(digest), "running", nx=True, px=LEASE_MS)
                won = pipe.execute()
            passed = [e for e, ok in zip(events, won, strict=True) if ok]
            # Not passed: a duplicate, someone holds or finished this event.
            succeeded = db.done_among([e[2] for e in passed]) if passed else set()
            rows: list[tuple[Any, ...]] = []
            hashes: list[str] = []
            for entry_id, envelope, digest, data in passed:
                if digest in succeeded:  # finished before its gate key expired
                    continue
                started_ns = time.time_ns()
                result = db.result(probe_result(data, started_ns))
                finished_ns = time.time_ns()
                hashes.append(digest)
                rows.append(
                    (
                        digest,
                        envelope.type,
                        envelope.id or "",
                        envelope.source,
                        envelope.subject or "",
                        entry_id,
                        db.time(started_ns),
                        db.time(finished_ns),
                        (finished_ns - started_ns) / 1e6,
                        result,
                        stream,
                        CONSUMER,
                    )
                )
            db.write(rows)
            with client.pipeline(transaction=False) as pipe:
                for digest in hashes:
                    pipe.set(KEYS.gate(digest), "done", ex=DONE_TTL_S)
                pipe.xack(stream, group, *(entry_id for entry_id, _ in entries))
                pipe.execute()
            done += len(rows)
    out.write_text(json.dumps({"done": done}))
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="bench.engine.floor", description="the floor worker")
    parser.add_argument("--url", required=True)
    parser.add_argument("--stream", required=True)
    parser.add_argument("--group", required=True)
    parser.add_argument(
        "--database",
        required=True,
        help="a migrated streamdesk database: sqlite:///<path> or postgres://...",
    )
    parser.add_argument("--out", type=Path, required=True, help="JSON summary written at exit")
    parser.add_argument("--ready", type=Path, required=True, help="touched once connected")
    parser.add_argument("--max-seconds", type=float, default=600.0)
    parser.add_argument("--latency", action="store_true", help="wait for events until SIGTERM")
    args = parser.parse_args(argv)
    signal.signal(signal.SIGTERM, on_sigterm)
    deadline = time.monotonic() + args.max_seconds
    return run(
        args.url,
        args.stream,
        args.group,
        args.database,
        args.out,
        deadline,
        args.ready,
        wait=args.latency,
    )


if __name__ == "__main__":
    raise SystemExit(main())
