"""``make bench-outbox``: outbox rows/s through the relay, and commit-to-XADD latency.

A private Valkey, and a throwaway PostgreSQL database at 127.0.0.1:5432 (user postgres) if
one answers, else a temporary SQLite file. Throughput: emit N rows (transactions of 100),
then time ``Relay.run_once`` until they are all sent, beside a plain pipelined XADD of the
same envelopes (the ceiling). Latency: a ``manage.py relay`` subprocess runs while this
process commits one-row transactions at a steady rate; each row's commit time (taken right
after COMMIT) is compared with its stream entry id's millisecond timestamp (the XADD).
Writes its block of docs/benchmarks.md (bench/outbox/report.py). Usage::

    .venv/bin/python -m bench.outbox            # the full run (about a minute)
    .venv/bin/python -m bench.outbox --quick    # a smoke run; writes to a temp file
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import redis

from bench.common.harness import PYTHON, ROOT, BenchError, log_tail, wait_until
from bench.common.options import parse_sized
from bench.common.report import OUTBOX_SUITE
from bench.common.stack import bench_stack, setup_django
from bench.outbox import report as outbox_report

THROUGHPUT_STREAM = "bench:outbox:relay"
CEILING_STREAM = "bench:outbox:ceiling"
LATENCY_STREAM = "bench:outbox:latency"
TXN_ROWS = 100
# The sizes a smoke run (--quick) and a full run take unless given.
QUICK = {"rows": 2_000, "repeats": 1, "seconds": 2.0}
FULL = {"rows": 20_000, "repeats": 3, "seconds": 10.0}


def parse(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench.outbox", description=__doc__)
    parser.add_argument("--rows", type=int, help="rows per throughput repeat (20000)")
    parser.add_argument("--repeats", type=int, help="throughput repeats (3)")
    parser.add_argument("--rate", type=float, default=200.0, help="latency: commits/s (200)")
    parser.add_argument("--seconds", type=float, help="latency window, s (10)")
    parser.add_argument("--sqlite", action="store_true", help="SQLite even if PostgreSQL answers")
    return parse_sized(parser, argv, OUTBOX_SUITE, "2,000 rows, 1 repeat, 2 s", QUICK, FULL)


def emit_rows(n: int, stream: str, per_txn: int) -> list[tuple[int, int]]:
    """Emit ``n`` probe rows in transactions of ``per_txn``: [(row id, commit ns)]."""
    from django.db import transaction

    from bench.engine.agents import PROBE_TYPE
    from workers.producers.outbox import emit

    out: list[tuple[int, int]] = []
    for start in range(0, n, per_txn):
        with transaction.atomic():
            ids = [
                emit(PROBE_TYPE, {"n": i, "sent_ns": 0}, subject=f"bench/{i}", stream=stream).pk
                for i in range(start, min(n, start + per_txn))
            ]
        committed = time.time_ns()
        out.extend((pk, committed) for pk in ids)
    return out


def throughput(client: redis.Redis, rows: int) -> dict[str, float]:
    from workers.models import OutboxEvent
    from workers.producers.publish import publish_envelopes
    from workers.producers.relay import Relay, envelope_of

    client.delete(THROUGHPUT_STREAM, CEILING_STREAM)
    began = time.perf_counter()
    ids = emit_rows(rows, THROUGHPUT_STREAM, TXN_ROWS)
    emit_s = time.perf_counter() - began
    relay = Relay(client)
    began = time.perf_counter()
    while relay.run_once():
        pass
    relay_s = time.perf_counter() - began
    if relay.sent != rows or client.xlen(THROUGHPUT_STREAM) != rows:
        raise BenchError(f"relay sent {relay.sent}, stream has {client.xlen(THROUGHPUT_STREAM)}")
    first = ids[0][0]
    envelopes = [envelope_of(r) for r in OutboxEvent.objects.filter(id__gte=first).order_by("id")]
    batch = relay.config.batch_size
    began = time.perf_counter()
    for start in range(0, len(envelopes), batch):
        publish_envelopes(client, CEILING_STREAM, envelopes[start : start + batch])
    ceiling_s = time.perf_counter() - began
    return {
        "emit_rate": rows / emit_s,
        "relay_rate": rows / relay_s,
        "ceiling_rate": rows / ceiling_s,
    }


def latency(env: dict[str, str], client: redis.Redis, args: argparse.Namespace, log: Path) -> Any:
    """Commit one-row transactions at ``args.rate`` while a relay subprocess sends them."""
    from workers.redis.bus import EVENT_FIELD

    with open(log, "wb") as out:
        proc = subprocess.Popen(
            [PYTHON, "manage.py", "relay"], cwd=ROOT, env=env, stdout=out, stderr=out
        )
    try:
        wait_until(lambda: b"relay started" in log.read_bytes(), "the relay to start", 60)
        committed: list[tuple[int, int]] = []
        total = int(args.rate * args.seconds)
        t0 = time.perf_counter()
        for i in range(total):
            pause = t0 + i / args.rate - time.perf_counter()
            if pause > 0:
                time.sleep(pause)
            committed.extend(emit_rows(1, LATENCY_STREAM, 1))
        wait_until(lambda: client.xlen(LATENCY_STREAM) >= total, "the relay to send", 60)
        proc.send_signal(signal.SIGTERM)
        try:
            code = proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            raise BenchError(f"relay did not stop:\n{log_tail(log)}") from None
        if code != 0:
            raise BenchError(f"relay exited {proc.returncode}:\n{log_tail(log)}")
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=10)
    xadd_ms: dict[int, int] = {}
    for entry_id, fields in client.xrange(LATENCY_STREAM):
        xadd_ms[int(json.loads(fields[EVENT_FIELD])["id"])] = int(entry_id.split("-")[0])
    lags = sorted(xadd_ms[pk] - ns / 1e6 for pk, ns in committed)
    return lags, total


def percentile(values: list[float], q: float) -> float:
    return values[min(len(values) - 1, round(q * (len(values) - 1)))]


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    args = parse(argv)
    began = time.time()
    with bench_stack("outbox", sqlite=args.sqlite) as stack:
        client, env, tmp, pg = stack.client, stack.env, stack.tmp, stack.postgres
        info = client.info("server")
        valkey = info.get("valkey_version") or info["redis_version"]
        print(f"outbox bench: {pg or 'SQLite'}, Valkey {valkey}, {os.cpu_count()} CPUs", flush=True)
        setup_django(env)
        import bench.engine.agents  # noqa: F401  registers bench.probe in the default registry
        from workers.producers.relay import RelayConfig

        runs = []
        for n in range(args.repeats):
            runs.append(throughput(client, args.rows))
            print(f"  throughput {n + 1}/{args.repeats}: {runs[-1]}", flush=True)
        lags, total = latency(env, client, args, tmp / "relay.log")
        print(f"  latency: {len(lags)} rows, p99 {percentile(lags, 0.99):.1f} ms", flush=True)
    results = outbox_report.OutboxResults(
        began=began,
        ended=time.time(),
        command=OUTBOX_SUITE.command(argv),
        database=pg or "SQLite (temp file, WAL)",
        waits=(
            "LISTEN/NOTIFY"
            if pg
            else f"a bounded {RelayConfig().idle_sleep_s:g} s sleep (SQLite has no NOTIFY)"
        ),
        valkey=f"Valkey {valkey}",
        cpus=os.cpu_count() or 0,
        rows=args.rows,
        txn_rows=TXN_ROWS,
        batch=RelayConfig().batch_size,
        relay=statistics.median(r["relay_rate"] for r in runs),
        relay_runs=[r["relay_rate"] for r in runs],
        ceiling=statistics.median(r["ceiling_rate"] for r in runs),
        emit=statistics.median(r["emit_rate"] for r in runs),
        rate=args.rate,
        seconds=args.seconds,
        committed=total,
        p50=percentile(lags, 0.50),
        p95=percentile(lags, 0.95),
        p99=percentile(lags, 0.99),
        max=lags[-1],
    )
    OUTBOX_SUITE.write(args.output, outbox_report.render(results), outbox_report.summary(results))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
