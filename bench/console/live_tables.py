"""``python -m bench.console.live_tables``: what one live table costs a console process per tick.

A private Valkey and SQLite: a group with 2,000 pending entries (50 of them held back for a
retry) and 2,000 dead letters. Each live table (console/live/tables.py) is read and rendered,
both role variants, as the console does once a tick per table shown; prints the median and
p95 time and the commands it sent (Redis' own count).
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import tempfile
import time
from pathlib import Path

ENTRIES = 2000
HELD = 50
READS = 20
STREAM, GROUP = "bench:tables", "agents"


def main() -> int:
    tmp = Path(tempfile.mkdtemp(prefix="streamdesk-bench-tables-"))
    from workers.redis.embedded import PrivateServer

    server = PrivateServer(tmp / "valkey").start()
    try:
        os.environ.update(REDIS_URL=server.url, DEBUG="1", STREAMDESK_DATA_DIR=str(tmp))
        os.environ["DATABASE_URL"] = f"sqlite:///{tmp / 'db.sqlite3'}"
        os.environ.setdefault("DJANGO_SETTINGS_MODULE", "console.settings")
        import django

        django.setup()
        from django.core.management import call_command

        call_command("migrate", verbosity=0)
        measure()
    finally:
        server.stop()
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


def fill() -> None:
    from console.runtime import keys, redis_client
    from workers.from_settings import engine_config

    r = redis_client()
    events = [
        json.dumps({"type": "demo.echo", "id": f"e{n}", "data": {"n": n}}) for n in range(ENTRIES)
    ]
    ids = [r.xadd(STREAM, {"event": e}) for e in events]
    r.xgroup_create(STREAM, GROUP, id="0")
    r.xreadgroup(GROUP, "w", {STREAM: ">"}, count=ENTRIES)
    held, due = ids[:HELD], int(time.time() * 1000) + 40_000
    r.xclaim(STREAM, GROUP, "w", 0, held, idle=engine_config().claim_idle_ms - 40_000, justid=True)
    r.zadd(keys().waits(STREAM, GROUP), dict.fromkeys(held, due))
    letter = {"deliveries": "5", "reason": "max-deliveries", "error": "boom", "by": "w"}
    for e in events:
        r.xadd(f"{STREAM}:dead", {"event": e, **letter})


def measure() -> None:
    from console import table_rows
    from console.live.realtime import DEAD_TABLE, PENDING_TABLE, RETRIES_TABLE, table_key
    from console.runtime import redis_client

    fill()
    r, reader = redis_client(), table_rows.reader()
    tables = {
        "pending (50 rows)": table_key(PENDING_TABLE, STREAM, GROUP),
        f"retry queue ({HELD} held back)": table_key(RETRIES_TABLE, STREAM, GROUP),
        "dead letters (50 rows)": table_key(DEAD_TABLE, STREAM),
    }
    for label, name in tables.items():
        before = int(r.info("stats")["total_commands_processed"])
        times = []
        for _ in range(READS):
            started = time.perf_counter()
            assert reader.read(name) is not None, name
            times.append((time.perf_counter() - started) * 1000)
        sent = (int(r.info("stats")["total_commands_processed"]) - before - 1) / READS
        p95 = sorted(times)[int(READS * 0.95) - 1]
        median = statistics.median(times)
        print(f"{label}: median {median:.1f} ms, p95 {p95:.1f} ms, {sent:.0f} commands a read")


if __name__ == "__main__":
    raise SystemExit(main())
