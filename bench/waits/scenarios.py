"""The four measurements of ``python -m bench.waits``, each against real runworkers on the
run's private server and database (bench/waits/run.py says what each shows)."""

from __future__ import annotations

import json
import subprocess
import time
from collections import Counter
from dataclasses import dataclass
from datetime import datetime

from bench.common.harness import PYTHON, ROOT, STREAM, BenchError, wait_until
from bench.common.stack import Stack
from bench.engine.agents import PROBE_TYPE
from bench.waits import agents
from bench.waits.fleet import AGENTS, KEYS, AtRest, at_rest, drain, pickups, settled, start

PICKUP_INTERVAL_S = 0.02  # plain events published one at a time, 50/s
LOAD_FLAGS = ("--concurrency", "200", "--batch-size", "200")  # bench.engine's worker


def publish_all(stack: Stack, event_type: str, data: list[dict[str, object]]) -> None:
    """XADD one event per ``data`` in pipelines of 1,000."""
    for start_at in range(0, len(data), 1000):
        with stack.client.pipeline(transaction=False) as pipe:
            for one in data[start_at : start_at + 1000]:
                body = {"type": event_type, "source": "bench", "data": one}
                pipe.xadd(STREAM, {"event": json.dumps(body)})
            pipe.execute()


def count(event_type: str, status: str) -> int:
    from workers.models import AgentRun

    return AgentRun.objects.filter(event_type=event_type, status=status).count()


def park(stack: Stack, event_type: str, runs: int, timeout_s: float) -> float:
    """Publish ``runs`` events of an agent that waits; the seconds until every one waits,
    its entry acked."""
    t0 = time.perf_counter()
    publish_all(stack, event_type, [{"n": n} for n in range(runs)])

    def parked() -> bool:
        return count(event_type, "waiting") == runs and settled(stack.client)

    wait_until(parked, f"{runs} runs to wait", timeout_s, 0.1)
    return time.perf_counter() - t0


@dataclass(frozen=True, slots=True)
class Approvals:
    runs: int
    concurrency: int
    park_s: float
    pickup_none_ms: list[float]  # sorted, none waiting
    pickup_waiting_ms: list[float]  # sorted, ``runs`` waiting
    pickup_after_ms: list[float]  # sorted, none waiting again (all resumed): drift's control
    resume_s: float  # the approvals published (to the new worker) to every run done
    before: Counter[int]  # runs of the step before the wait, per run: {times: runs}
    after: Counter[int]  # runs of the step after it
    succeeded: int
    approved: int  # results that say the approval came
    left_waiting: int
    dead_letters: int


def approvals(stack: Stack, runs: int, pickups_n: int, concurrency: int) -> Approvals:
    flags = ("--concurrency", str(concurrency))
    first = start(stack, "approvals-1", *flags)
    try:
        none = pickups(stack.client, 0, pickups_n, PICKUP_INTERVAL_S)
        park_s = park(stack, agents.APPROVAL, runs, 120)
        waiting = pickups(stack.client, pickups_n, pickups_n, PICKUP_INTERVAL_S)
        first.kill()
    finally:
        first.stop()
    second = start(stack, "approvals-2", *flags)
    try:
        t0 = time.perf_counter()
        publish_all(stack, agents.APPROVE, [{"n": n} for n in range(runs)])
        done = lambda: count(agents.APPROVAL, "succeeded") == runs  # noqa: E731
        wait_until(done, f"{runs} runs to resume", 120, 0.05)
        resume_s = time.perf_counter() - t0
        wait_until(lambda: settled(stack.client), "every answer acked", 30)
        time.sleep(2.0)  # a duplicate would show up in the counts meanwhile
        after = pickups(stack.client, 2 * pickups_n, pickups_n, PICKUP_INTERVAL_S)
        second.check()
    finally:
        second.stop()
    return Approvals(
        runs,
        concurrency,
        park_s,
        none,
        waiting,
        after,
        resume_s,
        Counter(int(v) for v in stack.client.hvals(agents.BEFORE)),
        Counter(int(v) for v in stack.client.hvals(agents.AFTER)),
        count(agents.APPROVAL, "succeeded"),
        approved_results(runs),
        int(stack.client.zcard(KEYS.waiting(STREAM))),
        int(stack.client.xlen(f"{STREAM}:dead")),
    )


def approved_results(runs: int) -> int:
    """Distinct runs whose stored result says the approval came."""
    from workers.models import AgentRun

    results = AgentRun.objects.filter(event_type=agents.APPROVAL).values_list("result", flat=True)
    return len({r["n"] for r in results if r and r.get("approved") and 0 <= r["n"] < runs})


@dataclass(frozen=True, slots=True)
class Sleeps:
    runs: int
    seconds: float
    concurrency: int
    durable_s: float  # publish to the last run done, ctx.sleep
    holding_s: float  # the same with asyncio.sleep (the slot held)
    slept_s: tuple[float, float]  # ctx.sleep's shortest and longest sleep


def sleeps(stack: Stack, runs: int, seconds: float, concurrency: int) -> Sleeps:
    from workers.models import AgentRun

    worker = start(stack, "sleeps", "--concurrency", str(concurrency))
    try:
        walls = []
        for kind in (agents.NAP, agents.HOLD):
            t0 = time.perf_counter()
            publish_all(stack, kind, [{"n": n, "seconds": seconds} for n in range(runs)])
            done = lambda k=kind: count(k, "succeeded") == runs  # noqa: E731
            wait_until(done, f"{runs} runs of {kind}", runs * seconds + 60, 0.05)
            walls.append(time.perf_counter() - t0)
        worker.check()
    finally:
        worker.stop()
    naps = AgentRun.objects.filter(event_type=agents.NAP).values_list("result", flat=True)
    slept = [r["ended"] - r["began"] for r in naps]
    return Sleeps(runs, seconds, concurrency, walls[0], walls[1], (min(slept), max(slept)))


def failover(stack: Stack, naps: int) -> float:
    """Seconds from publishing ``naps`` runs of ``ctx.sleep(1)`` to their end, on a new
    worker, just after the SIGKILL of the one that held the timer lease (it holds it while
    anything is delayed: here one run waiting with an hour's timeout)."""
    first = start(stack, "failover-1", "--concurrency", "4")
    try:
        publish_all(stack, agents.APPROVAL, [{"n": -1}])  # not one of approvals()
        wait_until(lambda: stack.client.pttl(KEYS.timers_lease) > 0, "the timer's lease", 30)
        first.kill()
    finally:
        first.stop()
    second = start(stack, "failover-2", "--concurrency", "4")
    try:
        before = count(agents.NAP, "succeeded")  # sleeps() ran some
        t0 = time.perf_counter()
        publish_all(stack, agents.NAP, [{"n": -n, "seconds": 1} for n in range(1, naps + 1)])
        done = lambda: count(agents.NAP, "succeeded") == before + naps  # noqa: E731
        wait_until(done, "the sleeps after the failover", 120, 0.05)
        return time.perf_counter() - t0
    finally:
        second.stop()


@dataclass(frozen=True, slots=True)
class Delayed:
    delay_s: float
    publish_to_start_ms: list[float]  # sorted
    command: str


def delayed(stack: Stack, events: int, delay_s: float) -> Delayed:
    """``manage.py publish --delay``, one call per event; each event's time from its
    publish (its printed due time less the delay: the server's clock at the hold) to its
    probe's start (this machine's clock: the same host)."""
    from workers.models import AgentRun

    env = {**stack.env, "STREAMDESK_AGENT_MODULES": AGENTS}
    env.pop("STREAMDESK_DEMO", None)
    worker = start(stack, "delayed", "--concurrency", "4")
    try:
        published: dict[int, float] = {}
        for i in range(events):
            n = 1_000_000 + i
            data = json.dumps({"n": n, "sent_ns": 0})
            argv = ["manage.py", "publish", PROBE_TYPE, "--data", data, "--delay", f"{delay_s:g}"]
            out = subprocess.run(
                [PYTHON, *argv], cwd=ROOT, env=env, capture_output=True, text=True, timeout=60
            )
            if out.returncode != 0:
                raise BenchError(f"publish --delay failed:\n{out.stderr}")
            due = datetime.fromisoformat(out.stdout.split(" due ")[1].strip())
            published[n] = due.timestamp() * 1000 - delay_s * 1000

        def started() -> dict[int, float]:
            rows = AgentRun.objects.filter(event_type=PROBE_TYPE, result__isnull=False)
            found = (r for r in rows.values_list("result", flat=True) if r["n"] in published)
            return {r["n"]: r["started_ns"] / 1e6 for r in found}

        wait_until(lambda: len(started()) == events, "the delayed events to run", 30, 0.1)
        worker.check()
    finally:
        worker.stop()
    got = started()
    lags = sorted(got[n] - published[n] for n in published)
    shown = f"python manage.py publish {PROBE_TYPE} --data '...' --delay {delay_s:g}"
    return Delayed(delay_s, lags, shown)


@dataclass(frozen=True, slots=True)
class Load:
    waits: int
    timers: int
    park_s: float
    drained: int  # plain events per drain
    before: list[float]  # events/s of each drain, none waiting
    after: list[float]  # events/s of each drain, ``waits`` waiting
    cancelled: list[float]  # events/s of each drain once every wait was cancelled (control)
    rss_before: float  # MiB: after the drains before, before the waits
    rss_parked: float
    rss_drained: float
    rss_second: float  # after a second ``waits`` parked, past the drains
    rest_before: AtRest
    rest_after: AtRest
    window_s: float
    woke: int  # parked runs no longer waiting before the cancel (should be 0)


def park_more(stack: Stack, first: int, runs: int) -> None:
    """``runs`` more ``bench.park`` runs, numbered from ``first``, until each waits."""
    publish_all(stack, agents.PARK, [{"n": n} for n in range(first, first + runs)])
    total = first + runs
    parked = lambda: count(agents.PARK, "waiting") == total and settled(stack.client)  # noqa: E731
    wait_until(parked, f"{total} runs to wait", 600, 0.1)


def cancel_all(stack: Stack) -> int:
    """Every parked run's wait cancelled (their index entries and wake-ups gone)."""
    from workers.models import AgentRun
    from workers.waits.cancel import cancel_waits

    hashes = list(
        AgentRun.objects.filter(event_type=agents.PARK).values_list("event_hash", flat=True)
    )
    return sum(
        cancel_waits(stack.client, KEYS, STREAM, hashes[i : i + 1000], "bench")
        for i in range(0, len(hashes), 1000)
    )


def load(stack: Stack, waits: int, events: int, drains: int, window_s: float) -> Load:
    worker = start(stack, "load", *LOAD_FLAGS)
    client = stack.client
    settle_s = 12.0  # past the worker's idle database connections closing (10 s)
    drain_round = lambda base: [  # noqa: E731
        drain(client, base + k * events, events) for k in range(drains)
    ]
    try:
        drain(client, 10_000_000, min(events, 2_000))  # warm-up
        before = drain_round(20_000_000)
        rss_before = worker.rss_mib()
        rest_before = at_rest(client, worker, settle_s, window_s)
        park_s = park(stack, agents.PARK, waits, 600)
        rss_parked = worker.rss_mib()
        timers = int(client.zcard(KEYS.delayed(STREAM)))
        rest_after = at_rest(client, worker, settle_s, window_s)
        after = drain_round(30_000_000)
        rss_drained = worker.rss_mib()
        park_more(stack, waits, waits)
        rss_second = worker.rss_mib()
        woke = 2 * waits - int(client.zcard(KEYS.waiting(STREAM)))
        if cancel_all(stack) != 2 * waits - woke:
            raise BenchError("cancelling the parked runs' waits missed some")
        cancelled = drain_round(40_000_000)
        worker.check()
    finally:
        worker.stop()
    return Load(
        waits,
        timers,
        park_s,
        events,
        before,
        after,
        cancelled,
        rss_before,
        rss_parked,
        rss_drained,
        rss_second,
        rest_before,
        rest_after,
        window_s,
        woke,
    )
