"""``python -m bench.replay``: issue 31's replay targets.

A private Valkey, and a throwaway PostgreSQL database at 127.0.0.1:5432 (user postgres) if
one answers, else a temporary SQLite file; the probe agent of ``bench.engine.agents``.

1. **Drain**: 100,000 probe events published, then drained by ``runworker --burst`` (the
   live drain); then ``manage.py replay --agent bench.probe --force`` copies the same
   100,000 back and a second ``runworker --burst`` drains them (the replay drain). Each
   drain's time is its runs' span in the database (the first run's start to the last
   one's end: the worker's start-up is not the engine's), and the replay's copying is timed
   on its own. Target: the replay drains at no less than 0.8x the live drain.
2. **Preview**: the stream topped up to 1,000,000 entries, then a replay's dry-run preview
   (``workers.replay.checked_preview``: the range counted in the server, what the agent
   already did in the database) timed in this process, and ``manage.py replay --dry-run``
   as a whole. Target: under 5 s.

Writes its block of docs/benchmarks.md (bench/replay/report.py). Usage::

    .venv/bin/python -m bench.replay            # the full run (about 2 minutes)
    .venv/bin/python -m bench.replay --quick    # a smoke run; writes to a temp file
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time

import redis

from bench.common.harness import PYTHON, ROOT, STREAM, BenchError, log_tail, runworker_cmd
from bench.common.options import parse_sized
from bench.common.stack import Stack, in_process_stack
from bench.replay import report as replay_report
from bench.replay.report import REPLAY_SUITE, Drain, PreviewTiming, Round

AGENTS = "bench.engine.agents"
AGENT = "bench.probe"
PIPELINE = 10_000
QUICK = {"events": 5_000.0, "entries": 50_000.0, "repeats": 1.0, "rounds": 1.0}
FULL = {"events": 100_000.0, "entries": 1_000_000.0, "repeats": 3.0, "rounds": 5.0}


def parse(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench.replay", description=__doc__)
    parser.add_argument("--events", type=float, help="events drained live, then replayed (1e5)")
    parser.add_argument("--entries", type=float, help="stream entries the preview reads (1e6)")
    parser.add_argument("--repeats", type=float, help="timed previews (3)")
    parser.add_argument("--rounds", type=float, help="live and replay drains, alternated (5)")
    parser.add_argument("--sqlite", action="store_true", help="SQLite even if PostgreSQL answers")
    return parse_sized(parser, argv, REPLAY_SUITE, "5,000 events, 50,000 entries", QUICK, FULL)


def publish(client: redis.Redis, first: int, count: int) -> str:
    """``count`` probe events ``first``..., pipelined as a producer would XADD them; the
    first one's entry id."""
    ids: list[str] = []
    for start in range(first, first + count, PIPELINE):
        with client.pipeline(transaction=False) as pipe:
            for n in range(start, min(first + count, start + PIPELINE)):
                event = {
                    "type": AGENT,
                    "source": "bench",
                    "id": f"p{n}",
                    "subject": f"bench/{n % 100}",
                    "data": {"n": n, "sent_ns": 0},
                }
                pipe.xadd(STREAM, {"event": json.dumps(event)})
            ids += pipe.execute()[:1]
    return str(ids[0]) if ids else ""


def run(stack: Stack, argv: list[str], name: str, timeout_s: float = 600) -> float:
    """A ``manage.py`` subprocess to its end (exit 0, else BenchError): its wall time."""
    env = {**stack.env, "STREAMDESK_AGENT_MODULES": AGENTS}
    log = stack.tmp / f"{name}.log"
    began = time.perf_counter()
    with open(log, "wb") as out:
        code = subprocess.run(
            argv, cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT, timeout=timeout_s
        ).returncode
    if code != 0:
        raise BenchError(f"{' '.join(argv[1:4])} exited {code}:\n{log_tail(log)}")
    return time.perf_counter() - began


def drain(stack: Stack, events: int, name: str, replays: bool) -> Drain:
    """``runworker --burst`` to its end; the span of the runs it made (first runs, or the
    replays' runs), which must be ``events`` succeeded ones."""
    from django.db.models import Count, Max, Min
    from django.utils import timezone

    from workers.models import AgentRun

    began = timezone.now()
    wall_s = run(stack, runworker_cmd(burst=True), name)
    rows = AgentRun.objects.filter(started_at__gte=began, status="succeeded")
    rows = rows.exclude(replay_of="") if replays else rows.filter(replay_of="")
    got = rows.aggregate(n=Count("id"), first=Min("started_at"), last=Max("finished_at"))
    if got["n"] != events:
        raise BenchError(f"{name}: {got['n']} runs for {events} events")
    return Drain(events, wall_s, (got["last"] - got["first"]).total_seconds())


def live(stack: Stack, events: int, k: int) -> tuple[Drain, str]:
    """Batch ``k``: ``events`` new events published and drained; its first entry id."""
    first = publish(stack.client, k * events, events)
    return drain(stack, events, f"live-{k}", replays=False), first


def rounds(stack: Stack, events: int, count: int) -> list[Round]:
    """Live and replay drains, alternated: live 1, replay 1, live 2, replay 2, ... live
    n + 1. Each replay (``--force``, its range: the batch just drained live) is weighed
    against the live drains on either side of it, so neither the machine getting busier or
    quieter nor the database growing by every drain counts against one of the two."""
    out = []
    before, first = live(stack, events, 0)
    for k in range(count):
        argv = [PYTHON, "manage.py", "replay", "--agent", AGENT, "--force", "--from", first]
        copy_s = run(stack, [*argv, "--reason", "bench"], f"replay-{k}")
        again = drain(stack, events, f"replay-drain-{k}", replays=True)
        after, first = live(stack, events, k + 1)
        done = Round(before, again, after, copy_s)
        out.append(done)
        print(
            f"  round {k + 1}: live {before.per_s:,.0f} and {after.per_s:,.0f}, replay "
            f"{again.per_s:,.0f} events/s ({done.ratio:.2f}x); copied in {copy_s:.1f} s",
            flush=True,
        )
        before = after
    return out


def server_us(client: redis.Redis) -> int:
    """Microseconds the server has spent in scripts (EVALSHA) so far."""
    stats = client.info("commandstats")
    return sum(int(v["usec"]) for k, v in stats.items() if k in ("cmdstat_evalsha", "cmdstat_eval"))


def nth_id(client: redis.Redis, n: int) -> str:
    """The id of the stream's ``n``-th entry (the drains may have left more than ``n``)."""
    beyond = int(client.xlen(STREAM)) - n
    if beyond <= 0:
        return ""
    return str(client.xrevrange(STREAM, "+", "-", count=beyond + 1)[-1][0])


def previews(stack: Stack, entries: int, repeats: int) -> PreviewTiming:
    import bench.engine.agents  # noqa: F401  (registers the probe agent in this process)
    from workers import replay
    from workers.core.registry import default_registry

    have = int(stack.client.xlen(STREAM))
    publish(stack.client, have, max(0, entries - have))
    end = nth_id(stack.client, entries)
    plan = replay.plan(default_registry, "agents", AGENT, [STREAM], end=end)
    subject = replay.plan(default_registry, "agents", AGENT, [STREAM], end=end, subject="bench/7")
    timings, db_s, lua_s, found = [], [], [], None
    for _ in range(repeats):
        began, spent = time.perf_counter(), server_us(stack.client)
        found = replay.checked_preview(stack.client, plan)
        timings.append(time.perf_counter() - began)
        lua_s.append((server_us(stack.client) - spent) / 1e6)
        db_s.append(found.db_s)
    began = time.perf_counter()
    by_subject = replay.checked_preview(stack.client, subject)
    subject_s = time.perf_counter() - began
    cli_s = run(stack, [PYTHON, "manage.py", "replay", "--agent", AGENT, "--dry-run"], "dry-run")
    assert found is not None
    print(f"  preview of {found.in_range:,} entries: {min(timings):.2f} s", flush=True)
    return PreviewTiming(found.in_range, found.matching, found.already_done, timings, db_s,
                         lua_s, by_subject.matching, subject_s, cli_s)  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    args = parse(argv)
    began = time.time()
    with in_process_stack("replay", sqlite=args.sqlite, demo=False) as (stack, machine):
        drained = rounds(stack, int(args.events), int(args.rounds))
        preview = previews(stack, int(args.entries), int(args.repeats))
        database = stack.postgres or "SQLite (temp file)"
        machine = machine.finish()
    results = replay_report.ReplayResults(
        began, time.time(), REPLAY_SUITE.command(argv), machine, database, drained, preview
    )
    REPLAY_SUITE.write(args.output, replay_report.render(results), replay_report.summary(results))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
