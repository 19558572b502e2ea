"""``python -m bench.timers``: issue 30's target for delayed events, and what the timer costs.

A private Valkey, and a throwaway PostgreSQL database at 127.0.0.1:5432 (user postgres) if
one answers, else a temporary SQLite file; real ``runworker`` processes (DEBUG off, only the
probe agent of ``bench.engine.agents``), each with its timer candidate.

1. **Idle cost**: two runworkers at rest, the server's commands/s over a window, in three
   states: nothing delayed and no schedule; one schedule declared (``0 0 1 1 *``: no tick
   in the window); one delayed event waiting an hour. The first is what every fleet pays;
   the others say what a timer with something to wait for adds.
2. **Lateness**: this process publishes delayed events at a steady rate (1,000/s by default,
   each ``delay_s=2``) for a window, while the two runworkers move them in and run them.
   Each event's lateness is its stream entry id's millisecond time (the server's clock at
   the XADD) minus its due time (the server's clock at the hold, plus the delay); and, to
   the agent, the probe's start time minus the due time (same machine clock).

Writes its block of docs/benchmarks.md (bench/timers/report.py). Usage::

    .venv/bin/python -m bench.timers            # the full run (about 5 minutes)
    .venv/bin/python -m bench.timers --quick    # a smoke run; writes to a temp file
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager

import redis

from bench.common.harness import PYTHON, ROOT, STREAM, BenchError, log_tail, wait_until
from bench.common.options import parse_sized
from bench.common.stack import Stack, in_process_stack
from bench.timers import report as timers_report
from bench.timers.report import TIMERS_SUITE, Idle, Lateness

AGENTS = "bench.engine.agents"
WORKERS = 2
DELAY_MS = 2_000
BATCH = 10  # events held per publish call: 100 calls/s at 1,000/s
# Yearly: no tick falls in the window, whose count would then hold the tick's run too.
SCHEDULE = json.dumps(
    [{"cron": "0 0 1 1 *", "type": "bench.probe", "data": {"n": 0, "sent_ns": 0}}]
)
QUICK = {"seconds": 3.0, "idle_s": 10.0}
FULL = {"seconds": 30.0, "idle_s": 60.0}


def parse(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench.timers", description=__doc__)
    parser.add_argument("--rate", type=float, default=1000.0, help="delayed events/s (1000)")
    parser.add_argument("--seconds", type=float, help="publishing window, s (30)")
    parser.add_argument("--idle-s", type=float, help="each idle state's window, s (60)")
    parser.add_argument("--sqlite", action="store_true", help="SQLite even if PostgreSQL answers")
    return parse_sized(parser, argv, TIMERS_SUITE, "3 s of load, 10 s idle windows", QUICK, FULL)


@contextmanager
def fleet(stack: Stack, extra: dict[str, str]) -> Iterator[list[subprocess.Popen[bytes]]]:
    """``WORKERS`` runworkers, each waiting on the stream; stopped (SIGTERM) at the end."""
    env = {**stack.env, "STREAMDESK_AGENT_MODULES": AGENTS, **extra}
    env.pop("STREAMDESK_DEMO", None)
    procs = []
    for n in range(WORKERS):
        log = stack.tmp / f"worker-{n}.log"
        with open(log, "wb") as out:
            argv = [
                PYTHON,
                "manage.py",
                "runworker",
                "--consumer",
                f"timers-{n}",
                "--concurrency",
                "32",
            ]
            procs.append(subprocess.Popen(argv, cwd=ROOT, env=env, stdout=out, stderr=out))

    def ready() -> bool:
        for n, proc in enumerate(procs):
            if proc.poll() is not None:
                raise BenchError(f"worker {n} exited:\n{log_tail(stack.tmp / f'worker-{n}.log')}")
        return int(stack.client.info("clients")["blocked_clients"]) >= WORKERS

    try:
        wait_until(ready, "the runworkers to wait on the stream", 60)
        yield procs
    finally:
        for proc in procs:
            proc.terminate()
        for proc in procs:
            try:
                proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                proc.kill()


def commands_per_s(client: redis.Redis, window_s: float) -> tuple[float, dict[str, float]]:
    """The server's commands/s over ``window_s`` (the two reads excluded), and by command."""

    def read() -> tuple[int, dict[str, int]]:
        stats = client.info("commandstats")
        total = int(client.info("stats")["total_commands_processed"])
        return total, {k.removeprefix("cmdstat_"): int(v["calls"]) for k, v in stats.items()}

    time.sleep(3.0)  # past the start-up: heartbeats written, the timer's first look done
    total0, by0 = read()
    time.sleep(window_s)
    total1, by1 = read()
    # The reads themselves: INFO twice each time.
    spent = {k: (by1[k] - by0.get(k, 0)) / window_s for k in by1 if by1[k] != by0.get(k, 0)}
    spent.pop("info", None)
    return (total1 - total0 - 2) / window_s, spent


def idle_states(stack: Stack, window_s: float) -> list[Idle]:
    """Each state from an empty server, the history recorder off: what differs is the timer."""
    from workers.producers.publish import build_envelope, hold_envelopes
    from workers.timers import Due

    quiet = {"STREAMDESK_HISTORY_RECORDER": "0"}
    states = [
        ("nothing delayed, no schedule", quiet, False),
        ("one schedule (`0 0 1 1 *`)", {**quiet, "STREAMDESK_SCHEDULES": SCHEDULE}, False),
        ("one delayed event due in an hour", quiet, True),
    ]
    found = []
    for state, extra, delayed in states:
        stack.client.flushdb()
        if delayed:
            later = build_envelope("bench.probe", {"n": -1, "sent_ns": 0})
            hold_envelopes(stack.client, STREAM, [later], Due(delay_ms=3_600_000))
        with fleet(stack, extra):
            total, by = commands_per_s(stack.client, window_s)
        found.append(Idle(state, total, by))
        print(f"  idle, {state}: {total:.2f} commands/s", flush=True)
    stack.client.flushdb()
    return found


def publish_at_rate(client: redis.Redis, rate: float, seconds: float) -> dict[int, int]:
    """Hold ``rate`` x ``seconds`` probe events, each due ``DELAY_MS`` after its hold, in
    batches of ``BATCH`` at a steady pace: {n: due ms}."""
    from workers.producers.publish import build_envelope, hold_envelopes
    from workers.timers import Due

    due: dict[int, int] = {}
    total = int(rate * seconds)
    t0 = time.perf_counter()
    for start in range(0, total, BATCH):
        pause = t0 + start / rate - time.perf_counter()
        if pause > 0:
            time.sleep(pause)
        ns = range(start, min(total, start + BATCH))
        held = [build_envelope("bench.probe", {"n": n, "sent_ns": 0}) for n in ns]
        for n, ms in zip(
            ns, hold_envelopes(client, STREAM, held, Due(delay_ms=DELAY_MS)), strict=True
        ):
            due[n] = ms
    achieved = total / (time.perf_counter() - t0)
    if achieved < rate * 0.95:
        raise BenchError(
            f"published {achieved:.0f}/s, short of {rate:g}/s: the machine is too busy"
        )
    return due


def lateness(stack: Stack, rate: float, seconds: float) -> Lateness:
    from workers.models import AgentRun, RunStatus

    with fleet(stack, {}):
        due = publish_at_rate(stack.client, rate, seconds)
        total = len(due)
        wait_until(lambda: stack.client.xlen(STREAM) >= total, "the delayed events", 60)

        def ran() -> bool:
            return AgentRun.objects.filter(status=RunStatus.SUCCEEDED).count() >= total

        wait_until(ran, "the probe runs", 120, interval_s=0.5)
    entered: dict[int, int] = {}
    for entry_id, fields in stack.client.xrange(STREAM):
        entered[json.loads(fields["event"])["data"]["n"]] = int(entry_id.split("-")[0])
    if len(entered) != total or stack.client.xlen(STREAM) != total:
        raise BenchError(f"{stack.client.xlen(STREAM)} entries for {total} delayed events")
    started = {
        int(r["n"]): int(r["started_ns"]) // 1_000_000
        for r in AgentRun.objects.values_list("result", flat=True)
    }
    return Lateness(
        rate=rate,
        seconds=seconds,
        events=total,
        delay_ms=DELAY_MS,
        to_stream=sorted(entered[n] - due[n] for n in due),
        to_agent=sorted(started[n] - due[n] for n in due),
    )


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    args = parse(argv)
    began = time.time()
    with in_process_stack("timers", sqlite=args.sqlite, demo=False) as (stack, machine):
        import bench.engine.agents  # noqa: F401  registers bench.probe in this process

        idle = idle_states(stack, args.idle_s)
        late = lateness(stack, args.rate, args.seconds)
        print(f"  lateness to the stream: p99 {late.p(late.to_stream, 0.99)} ms", flush=True)
        machine = machine.finish()
        database = stack.postgres or "SQLite (temp file, WAL)"
    results = timers_report.TimersResults(
        began,
        time.time(),
        TIMERS_SUITE.command(argv),
        machine,
        database,
        WORKERS,
        idle,
        args.idle_s,
        late,
    )
    TIMERS_SUITE.write(args.output, timers_report.render(results), timers_report.summary(results))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
