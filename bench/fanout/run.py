"""``make bench-fanout``: issue 31's targets for several agents on one event type.

1. Correctness: 300 events of one type, agents ``a`` and ``b`` (``b`` fails every 10th for
   good), one ``runworker --burst``: ``a`` runs 300, ``b`` 270 and dead-letters 30, each
   event once per agent (one row, one attempt per agent and event).
2. Pausing ``b`` does not slow ``a``: 20,000 preloaded events, ``a``'s drain rate (its
   first run's start to its last's, from the rows) in a deployment without ``b``
   (``bench.fanout.agents_alone``: the home group and ``a``), beside ``b``, and beside ``b``
   paused; rounds interleave the three.

Writes its block of docs/benchmarks.md. Usage::

    .venv/bin/python -m bench.fanout            # the full run (a few minutes)
    .venv/bin/python -m bench.fanout --quick    # a smoke run; writes to a temp file
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import time
from collections import Counter

from bench.common.databases import Database
from bench.common.harness import (
    PRODUCTION_ENV,
    PYTHON,
    STREAM,
    Bench,
    BenchError,
    open_bench,
)
from bench.common.report import FANOUT, Suite
from workers.core.keys import EVENT_FIELD, Keys

AGENT_MODULE = "bench.fanout.agents"
ALONE_MODULE = "bench.fanout.agents_alone"
TYPE = "fanout.ticket"
B_GROUP = "agents:b"
RUN_TIMEOUT_S = 300.0
CONFIGS = ("alone", "beside b", "b paused")
SUITE = Suite("make bench-fanout", "bench.fanout", FANOUT)


def worker_env(bench: Bench, db: Database, module: str = AGENT_MODULE) -> dict[str, str]:
    env = {**bench.env(db), **PRODUCTION_ENV, "STREAMDESK_AGENT_MODULES": module}
    env.pop("STREAMDESK_DEMO", None)
    return env


def publish(bench: Bench, events: int) -> None:
    for start in range(0, events, 1000):
        with bench.redis.pipeline(transaction=False) as pipe:
            for n in range(start, min(events, start + 1000)):
                body = {"type": TYPE, "source": "bench", "id": f"t{n}", "data": {"n": n}}
                pipe.xadd(STREAM, {EVENT_FIELD: json.dumps(body)})
            pipe.execute()


def burst(bench: Bench, db: Database, *args: str, module: str = AGENT_MODULE) -> None:
    """One ``runworker --burst`` to the end (the groups are created at its start)."""
    log = bench.log_path("fanout")
    with log.open("ab") as out:
        done = subprocess.run(
            [PYTHON, "manage.py", "runworker", "--burst", "--batch-size", "200", *args],
            cwd=bench.src,
            env=worker_env(bench, db, module),
            stdout=out,
            stderr=subprocess.STDOUT,
            timeout=RUN_TIMEOUT_S,
        )
    if done.returncode:
        raise BenchError(f"runworker exited {done.returncode}: see {log}")


def rows(db: Database) -> list[tuple[str, str, str, int, str | None]]:
    with db.connect() as conn:
        found = conn.execute(
            "SELECT agent, status, event_key, attempts, result FROM workers_agentrun"
        ).fetchall()
    return [tuple(r) for r in found]  # type: ignore[misc]


def correctness(bench: Bench, events: int) -> dict[str, object]:
    bench.reset_redis()
    db = bench.database("fanout-correct")
    publish(bench, events)
    burst(bench, db)
    found = rows(db)
    by = Counter((agent, status) for agent, status, _, _, _ in found)
    once = all(
        len({key for ag, _, key, _, _ in found if ag == agent})
        == len([1 for ag, *_ in found if ag == agent])
        and all(n == 1 for ag, _, _, n, _ in found if ag == agent)
        for agent in ("a", "b")
    )
    letters = bench.redis.xlen(f"{STREAM}:dead")
    out = {
        "a_succeeded": by[("a", "succeeded")],
        "b_succeeded": by[("b", "succeeded")],
        "b_dead": by[("b", "dead")],
        "dead_letters": letters,
        "once_per_agent": once,
    }
    print(f"  correctness: {out}", flush=True)
    return out


def a_rate(db: Database) -> float:
    """``a``'s events per second, its first run's start to its last's."""
    starts = sorted(
        int(json.loads(result)["started_ns"])
        for agent, status, _, _, result in rows(db)
        if agent == "a" and status == "succeeded" and result
    )
    if len(starts) < 2:
        raise BenchError(f"a ran {len(starts)} events")
    return (len(starts) - 1) / ((starts[-1] - starts[0]) / 1e9)


def drain_a(bench: Bench, events: int, config: str) -> float:
    bench.reset_redis()
    db = bench.database(f"fanout-{config.replace(' ', '-')}")
    burst(bench, db, "--agent", "a", "--agent", "b")  # creates both groups, on nothing
    if config == "b paused":
        bench.redis.set(Keys().paused(STREAM, B_GROUP), json.dumps({"by": "bench"}))
    publish(bench, events)
    burst(bench, db, module=ALONE_MODULE if config == "alone" else AGENT_MODULE)
    rate = a_rate(db)
    print(f"  a {config:9s} {rate:8,.0f} events/s", flush=True)
    return rate


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.fanout", description=__doc__)
    parser.add_argument("--quick", action="store_true", help="a smoke run (small sizes)")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    events = 2_000 if args.quick else 20_000
    rounds = 1 if args.quick else args.rounds
    began = time.time()
    with open_bench() as bench:
        source = bench.source
        check = correctness(bench, 300)
        rates: dict[str, list[float]] = {c: [] for c in CONFIGS}
        for i in range(rounds):
            order = CONFIGS if i % 2 == 0 else tuple(reversed(CONFIGS))
            for config in order:
                rates[config].append(drain_a(bench, events, config))
    medians = {c: statistics.median(v) for c, v in rates.items()}
    body = report(check, rates, medians, events, rounds)
    head = f"{SUITE.generated(began, time.time())}, on {source}."
    text = (
        f"{FANOUT.begin}\n## Several agents on one event type\n\n{head}\n\n{body}\n{FANOUT.end}\n"
    )
    SUITE.write(SUITE.output(None, args.quick), text, body)


def report(
    check: dict[str, object],
    rates: dict[str, list[float]],
    medians: dict[str, float],
    events: int,
    rounds: int,
) -> str:
    ok = (
        check["a_succeeded"] == 300
        and check["b_succeeded"] == 270
        and check["b_dead"] == 30
        and check["once_per_agent"]
    )
    paused = medians["b paused"] / medians["alone"]
    beside = medians["beside b"] / medians["alone"]
    lines = [
        f"SQLite; one `runworker --burst` per drain; rounds: {rounds}.",
        "",
        "| target | measured | met |",
        "|---|---|---|",
        f"| 300 events, `a` runs 300 | {check['a_succeeded']} | {'yes' if ok else 'NO'} |",
        f"| `b` runs 270, dead-letters 30 | {check['b_succeeded']} run, {check['b_dead']} dead "
        f"({check['dead_letters']} letters) | {'yes' if ok else 'NO'} |",
        f"| each event once per agent | {check['once_per_agent']} | {'yes' if ok else 'NO'} |",
        f"| pausing `b` does not slow `a` ({events:,} events) | `a` with `b` paused at "
        f"{paused:.2f}x its rate without `b` | {'yes' if paused >= 0.9 else 'NO'} |",
        "",
        "| `a`'s drain | median events/s | every round |",
        "|---|---|---|",
    ]
    for config in CONFIGS:
        each = ", ".join(f"{r:,.0f}" for r in rates[config])
        lines.append(f"| {config} | {medians[config]:,.0f} | {each} |")
    lines += [
        "",
        f"`alone` is the deployment without `b` (the home group and `a`). Beside `b` running, "
        f"`a` drains at {beside:.2f}x that: the two agents share one process's CPU and its "
        "database writer (each event is run twice, once per group); with `b` paused its "
        "group reads nothing, and `a` runs as if `b` were not there.",
    ]
    return "\n".join(lines)
