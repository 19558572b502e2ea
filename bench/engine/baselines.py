"""The two baselines, each run as its own process: ``python -m bench.engine.baselines raw|naive``.

raw    The ceiling: a redis-py XREADGROUP (COUNT 200) + XACK loop that does nothing else:
       no decoding, no gate, no database. In latency mode it BLOCKs and notes the time at
       read, then parses ``sent_ns`` (after the clock is taken).
naive  The baseline the article replaces: a worker polling a SQLite ``jobs`` table. Each
       poll fetches a page of pending jobs (oldest first); each job is decoded, validated
       with the probe's schema, "handled" (``probe_result``) and marked done with its own
       UPDATE, committed at once, as ``job.save()`` in a loop does. An empty poll sleeps 1 s.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import signal
import sqlite3
import threading
import time
from pathlib import Path
from types import FrameType
from typing import Any, cast

import redis

from bench.engine.agents import ProbeData, probe_result

RAW_COUNT = 200
NAIVE_PAGE = 100
NAIVE_IDLE_S = 1.0

stopping = threading.Event()


def on_sigterm(signum: int, frame: FrameType | None) -> None:
    stopping.set()


def run_raw(
    url: str, stream: str, group: str, latency: bool, out: Path, deadline: float, ready: Path
) -> int:
    client = redis.Redis.from_url(url, decode_responses=True, socket_timeout=30)
    client.ping()
    ready.touch()
    # Drain mode stops at the first empty read; latency mode blocks until SIGTERM.
    block_ms = 1_000 if latency else 100
    done = 0
    seen: list[tuple[int, int]] = []  # (n, read_ns - sent_ns)
    with contextlib.closing(client):
        while not stopping.is_set() and time.monotonic() < deadline:
            # RESP2 reply: [[stream, [(id, fields), ...]]], or None after BLOCK times out.
            reply = cast(
                "list[Any] | None",
                client.xreadgroup(group, "raw-1", {stream: ">"}, count=RAW_COUNT, block=block_ms),
            )
            read_ns = time.time_ns()
            entries = reply[0][1] if reply else []
            if not entries:
                if latency:
                    continue
                break
            if latency:
                for _, fields in entries:
                    data = json.loads(fields["event"])["data"]
                    seen.append((int(data["n"]), read_ns - int(data["sent_ns"])))
            client.xack(stream, group, *(entry_id for entry_id, _ in entries))
            done += len(entries)
    out.write_text(json.dumps({"done": done, "latencies_ns": seen}))
    return 0


def handle(payload: str) -> str:
    started_ns = time.time_ns()
    data = ProbeData.model_validate(json.loads(payload)["data"])
    return json.dumps(probe_result(data, started_ns))


def run_naive(db: Path, exit_when_idle: bool, out: Path, deadline: float, ready: Path) -> int:
    # Autocommit: every UPDATE below is its own transaction, as in the per-item ORM save.
    conn = sqlite3.connect(db, timeout=30, isolation_level=None)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA synchronous=NORMAL")
    ready.touch()
    done = polls = 0
    with contextlib.closing(conn):
        while not stopping.is_set() and time.monotonic() < deadline:
            polls += 1
            page = conn.execute(
                "SELECT id, payload FROM jobs WHERE status = 'pending' ORDER BY id LIMIT ?",
                (NAIVE_PAGE,),
            ).fetchall()
            if not page:
                if exit_when_idle:
                    break
                stopping.wait(NAIVE_IDLE_S)
                continue
            for job_id, payload in page:
                conn.execute(
                    "UPDATE jobs SET status = 'done', result = ?, finished_at = ? WHERE id = ?",
                    (handle(payload), time.time(), job_id),
                )
                done += 1
    out.write_text(json.dumps({"done": done, "polls": polls}))
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="bench.engine.baselines")
    sub = parser.add_subparsers(dest="which", required=True)
    raw = sub.add_parser("raw")
    raw.add_argument("--url", required=True)
    raw.add_argument("--stream", required=True)
    raw.add_argument("--group", required=True)
    naive = sub.add_parser("naive")
    naive.add_argument("--db", type=Path, required=True)
    for p in (raw, naive):
        p.add_argument("--latency", action="store_true", help="run until SIGTERM")
        p.add_argument("--out", type=Path, required=True, help="JSON summary written at exit")
        p.add_argument("--ready", type=Path, required=True, help="touched once connected")
        p.add_argument("--max-seconds", type=float, default=600.0)
    args = parser.parse_args(argv)
    signal.signal(signal.SIGTERM, on_sigterm)
    deadline = time.monotonic() + args.max_seconds
    if args.which == "raw":
        return run_raw(
            args.url, args.stream, args.group, args.latency, args.out, deadline, args.ready
        )
    return run_naive(args.db, not args.latency, args.out, deadline, args.ready)


if __name__ == "__main__":
    raise SystemExit(main())
