"""The "Waits (issue 30)" block of docs/benchmarks.md (``python -m bench.waits``), between
its own markers (``bench.common.report.WAITS``, which every bench writer keeps)."""

from __future__ import annotations

import statistics
from collections import Counter
from dataclasses import dataclass

from bench.common.machine import Machine
from bench.common.report import WAITS, Suite, about, facts, head, reflow, whole, yes
from bench.waits.fleet import AtRest
from bench.waits.scenarios import LOAD_FLAGS, Approvals, Delayed, Load, Sleeps

WAITS_SUITE = Suite("make bench-waits", "bench.waits", WAITS)
RATIO_TARGET = 0.8
REST_COMMANDS_S = 5.0  # issue 21's budget for one idle runworker
REST_CPU_MS_S = 2.0
# "At once": p99 within 2x, or 5 ms, of none waiting (the worse of before the waits and after
# they resumed: the machine is shared, its load drifts over the minute between them).
PICKUP_SLACK_MS = 5.0


@dataclass(frozen=True, slots=True)
class WaitsResults:
    began: float
    ended: float
    command: str
    machine: Machine
    database: str
    approvals: Approvals
    sleeps: Sleeps
    delayed: Delayed
    failover_naps: int
    failover_s: float  # their publish to their end
    load: Load


def p(values: list[float], q: float) -> float:
    return values[min(len(values) - 1, round(q * (len(values) - 1)))]


def flat_mib(base: float, now: float) -> bool:
    """bench.engine's rule: at most 5 MiB or 5% above the warm figure."""
    return now - base <= max(5.0, base / 20)


def pickup_none_p99(a: Approvals) -> float:
    return max(p(a.pickup_none_ms, 0.99), p(a.pickup_after_ms, 0.99))


def pickup_met(a: Approvals) -> bool:
    none, busy = pickup_none_p99(a), p(a.pickup_waiting_ms, 0.99)
    return busy <= max(2 * none, none + PICKUP_SLACK_MS)


def once(a: Approvals) -> bool:
    each = Counter({1: a.runs})
    return (
        a.before == each
        and a.after == each
        and a.succeeded == a.approved == a.runs
        and a.left_waiting == 0
        and a.dead_letters == 0
    )


def times(c: Counter[int]) -> str:
    return ", ".join(f"{runs} ran {k}x" for k, runs in sorted(c.items())) or "none"


def ratio(load: Load) -> float:
    return statistics.median(load.after) / statistics.median(load.before)


def targets(r: WaitsResults) -> list[tuple[str, str, bool | None]]:
    """(target, measured, met); met None: a row of context, not a target."""
    a, s, d, ld = r.approvals, r.sleeps, r.delayed, r.load
    busy = p(a.pickup_waiting_ms, 0.99)
    before, resumed = p(a.pickup_none_ms, 0.99), p(a.pickup_after_ms, 0.99)
    lags = d.publish_to_start_ms
    lo, hi = d.delay_s * 1000, d.delay_s * 1000 + 1000
    rest = ld.rest_after
    return [
        (
            f"{a.runs} runs waiting, `--concurrency {a.concurrency}`: a plain event still runs "
            "at once (pickup p99 within 2x, or +5 ms, of none waiting)",
            f"p99 {busy:.1f} ms vs {before:.1f} ms before the waits, {resumed:.1f} ms after",
            pickup_met(a),
        ),
        (
            f"SIGKILL with {a.runs} waiting, new worker + {a.runs} approvals: each run resumed "
            "exactly once, the step before the wait ran once",
            f"step after: {times(a.after)}; step before: {times(a.before)}; "
            f"{a.succeeded} succeeded, {a.approved} approved results",
            once(a),
        ),
        (
            f"{s.runs} runs of `ctx.sleep({s.seconds:g})`, `--concurrency {s.concurrency}`: "
            f"done within 2 x {s.seconds:g} s",
            f"{s.durable_s:.1f} s (slot held: {s.holding_s:.1f} s)",
            s.durable_s <= 2 * s.seconds,
        ),
        (
            f"`publish --delay {d.delay_s:g}`: the agent starts {d.delay_s:g} to "
            f"{d.delay_s + 1:g} s after the publish",
            f"{lags[0] / 1000:.2f} to {lags[-1] / 1000:.2f} s ({len(lags)} events)",
            lo <= lags[0] and lags[-1] <= hi,
        ),
        (
            f"context, not a target: {r.failover_naps} runs of `ctx.sleep(1)` published just "
            "after the SIGKILL of the worker holding the timer lease (its TTL: 30 s)",
            f"done {r.failover_s:.1f} s later",
            None,
        ),
        (
            f"{whole(ld.waits)} waits + {whole(ld.timers)} timers: plain events drain at "
            f"{RATIO_TARGET}x or more the rate with none waiting",
            f"{ratio(ld):.2f}x ({whole(statistics.median(ld.after))} vs "
            f"{whole(statistics.median(ld.before))} events/s)",
            ratio(ld) >= RATIO_TARGET,
        ),
        (
            f"the worker's memory flat: parking {whole(ld.waits)} waits, then draining",
            f"{ld.rss_before:.1f} -> {ld.rss_parked:.1f} -> {ld.rss_drained:.1f} MiB",
            flat_mib(ld.rss_before, ld.rss_parked) and flat_mib(ld.rss_before, ld.rss_drained),
        ),
        (
            f"context, not a target: the worker's RSS after {whole(ld.waits)} more parked, "
            "past the drains",
            f"{ld.rss_drained:.1f} -> {ld.rss_second:.1f} MiB "
            f"({ld.rss_second - ld.rss_drained:+.1f})",
            None,
        ),
        (
            "context, not a target: the drain rate once every wait was cancelled, against the "
            "rate with them waiting",
            f"{statistics.median(ld.cancelled) / statistics.median(ld.after):.2f}x "
            f"({whole(statistics.median(ld.cancelled))} vs "
            f"{whole(statistics.median(ld.after))} events/s)",
            None,
        ),
        (
            f"at rest with {whole(ld.waits)} waits + {whole(ld.timers)} timers: at most "
            f"{REST_COMMANDS_S:g} Redis commands/s (issue 21)",
            f"{rest.commands_s:.2f} (none waiting: {ld.rest_before.commands_s:.2f})",
            rest.commands_s <= REST_COMMANDS_S,
        ),
        (
            f"at rest with {whole(ld.waits)} waits + {whole(ld.timers)} timers: at most "
            f"{REST_CPU_MS_S:g} ms CPU/s (issue 21)",
            f"{rest.cpu_ms_s:.2f} (none waiting: {ld.rest_before.cpu_ms_s:.2f})",
            rest.cpu_ms_s <= REST_CPU_MS_S,
        ),
    ]


def _busiest(by: dict[str, float]) -> str:
    top = sorted(by.items(), key=lambda kv: -kv[1])[:4]
    pipe = "\\|"  # a table cell's |
    return ", ".join(f"{k.replace('|', pipe)} {v:.2f}" for k, v in top) or "none"


def _difference(one: AtRest, base: AtRest) -> str:
    """The commands/s ``one`` ran beyond ``base``, by command, the largest first."""
    names = set(one.by_command) | set(base.by_command)
    extra = {k: one.by_command.get(k, 0.0) - base.by_command.get(k, 0.0) for k in names}
    shown = sorted((kv for kv in extra.items() if abs(kv[1]) >= 0.01), key=lambda kv: -abs(kv[1]))
    pipe = "\\|"  # a table cell's |
    return ", ".join(f"{k.replace('|', pipe)} {v:+.2f}" for k, v in shown[:6]) or "none"


def _ms(values: list[float]) -> str:
    return f"{p(values, 0.5):.2f} / {p(values, 0.99):.2f} / {values[-1]:.2f} ms"


def render(r: WaitsResults) -> str:
    a, s, d, ld = r.approvals, r.sleeps, r.delayed, r.load
    rest0, rest1 = ld.rest_before, ld.rest_after
    resumed_ms = _ms(a.pickup_after_ms)
    mc = about(r.machine)
    target_rows = "\n".join(
        f"| {t} | {m} | {'-' if ok is None else yes(ok)} |" for t, m, ok in targets(r)
    )
    drains = ", ".join(whole(x) for x in ld.before)
    drains_after = ", ".join(whole(x) for x in ld.after)
    median_before, median_after, median_cancelled = (
        whole(statistics.median(x)) for x in (ld.before, ld.after, ld.cancelled)
    )
    drains_cancelled = ", ".join(whole(x) for x in ld.cancelled)
    ratio_s = f"{ratio(ld):.2f}x"
    busiest_before, busiest_after = (
        _busiest(x.by_command) for x in (ld.rest_before, ld.rest_after)
    )
    body = f"""{WAITS.begin}
## Waits (issue 30)

{WAITS_SUITE.generated(r.began, r.ended, r.command)}. Do not edit by hand: rerun it. Every
figure comes from this one run.

{facts([mc.machine, mc.server, ("database", r.database), mc.code, mc.load])}

| target | measured | met |
| --- | --- | --- |
{target_rows}

### Runs waiting for approval

{a.runs} `bench.approval` runs (a step, then `ctx.wait_for_event("bench.approve",
match={{"data.n": n}})`, then a step) parked on one `runworker --concurrency
{a.concurrency}` in {a.park_s:.1f} s. Plain probe events, published one at a time 50 a
second, before they wait, while they wait, and (a control for the machine's drift) once all
resumed: pickup is the probe's start minus the time taken just before its XADD.

{chr(10).join(head("plain events", "events", "p50 / p99 / max", align="lrr"))}
| none waiting | {len(a.pickup_none_ms)} | {_ms(a.pickup_none_ms)} |
| {a.runs} waiting | {len(a.pickup_waiting_ms)} | {_ms(a.pickup_waiting_ms)} |
| none waiting again (all resumed, the new worker) | {len(a.pickup_after_ms)} | {resumed_ms} |

Then the worker was SIGKILLed with the {a.runs} runs waiting, a new worker started, and
once it waited on the stream the {a.runs} approvals (`bench.approve`, one per run; no agent
takes that type) were published: every run had resumed and finished {a.resume_s:.1f} s
later. Counted in Redis hashes the agent's
steps increment: the step after the wait {times(a.after)}, the step before it
{times(a.before)}; {a.succeeded} runs succeeded, {a.approved} results say approved,
{a.left_waiting} still waiting, {a.dead_letters} dead letters (2 s after the last one, to
let any duplicate show).

### Sleeps that give back their slot

{s.runs} runs of `ctx.sleep({s.seconds:g})` on one `runworker --concurrency
{s.concurrency}` (already waiting on the stream), published in one go: the last was done
{s.durable_s:.1f} s later (each slept {s.slept_s[0]:.2f} to {s.slept_s[1]:.2f} s). The
same {s.runs} runs of an agent that holds its slot (`await asyncio.sleep({s.seconds:g})`)
on the same worker: {s.holding_s:.1f} s, about {s.runs} / {s.concurrency} x {s.seconds:g}
s.

### Delayed publish

{len(d.publish_to_start_ms)} calls of `{d.command}`, one after another, with a
`runworker` waiting: from each publish (its printed due time less {d.delay_s:g} s: the
server's clock at the hold) to the probe's start: {_ms(d.publish_to_start_ms)} (p50 / p99
/ max).

Sleeps and timeouts come back through the fleet's timer, which one worker runs at a time
under a lease (`workers/timers`); a holder renews it while anything is delayed. Killed, it
is replaced when its lease expires (30 s), so {r.failover_naps} runs of `ctx.sleep(1)`
published on a new worker just after the SIGKILL of the holder (one run was waiting with an
hour's timeout) were done {r.failover_s:.1f} s later. Answers do not go through the timer:
the approvals above resumed at once after their SIGKILL.

### {whole(ld.waits)} runs waiting, {whole(ld.timers)} timers set

One `runworker {" ".join(LOAD_FLAGS)}` throughout. {whole(ld.waits)} `bench.park` runs each
wait for `bench.never` with a match of their own and a day's timeout (a wait in the index
and a wake-up in the stream's delayed set each); they parked in {ld.park_s:.1f} s
({whole(ld.waits / ld.park_s)}/s). Before and after: drains of {whole(ld.drained)} plain
probe events (XADDed in pipelines of 1,000, timed from the first XADD to every entry read
and acked), after a warm-up drain.

| | none waiting | {whole(ld.waits)} waiting | ratio | then every wait cancelled |
| --- | ---: | ---: | ---: | ---: |
| drain, events/s (median) | {median_before} | {median_after} | {ratio_s} | {median_cancelled} |
| each drain | {drains} | {drains_after} | | {drains_cancelled} |
| at rest: Redis commands/s | {rest0.commands_s:.2f} | {rest1.commands_s:.2f} | | |
| at rest: worker CPU, ms/s | {rest0.cpu_ms_s:.2f} | {rest1.cpu_ms_s:.2f} | | |
| at rest: busiest commands/s | {busiest_before} | {busiest_after} | | |
| at rest: the difference, by command | | {_difference(rest1, rest0)} | | |

The drains before and after the waits cannot be interleaved (the waits stay), so the
machine's load may drift between them: the last column is a control, the same drains once
every parked run's wait was cancelled (`workers.waits.cancel.cancel_waits`: out of the index,
wake-ups gone), after a second {whole(ld.waits)} runs were parked. A plain event's type is
not awaited, so the waits cost each batch of them one HKEYS of an empty key whether 0 or
{whole(ld.waits)} runs wait. The worker's RSS: {ld.rss_before:.1f} MiB after the drains
before, {ld.rss_parked:.1f} MiB with the {whole(ld.waits)} runs parked, {ld.rss_drained:.1f}
MiB after the drains with them waiting, {ld.rss_second:.1f} MiB once {whole(ld.waits)} more
were parked. At rest is the server's commands/s (this bench's INFO reads not counted) and the
worker's CPU time over {ld.window_s:g} s, after 12 s with nothing to do (past the worker's
idle database connections closing), with the history recorder on as deployed.
{ld.woke} of the parked runs stopped waiting before the cancel.

{REPRODUCE}
{WAITS.end}
"""
    return reflow(body)


REPRODUCE = WAITS_SUITE.rerun(
    "",
    [
        ("--quick", "smoke run, report to a temp file"),
        ("--waits 20000", "more runs waiting in the load part"),
        ("--sqlite", "SQLite even when PostgreSQL answers"),
    ],
)


def summary(r: WaitsResults) -> str:
    missed = [t for t, _, ok in targets(r) if ok is False]
    return "waits: every target met" if not missed else "waits: MISSED " + "; ".join(missed)
