"""The "Flow control" block of docs/benchmarks.md (``make bench-flow``). Every other bench
writer keeps this block as it is (its markers are ``bench.common.report.FLOW``)."""

from __future__ import annotations

import statistics
from dataclasses import dataclass, field

from bench.common.machine import Machine
from bench.common.report import FLOW, Suite, about, facts, head, reflow, whole, yes
from bench.flow.crash import CrashRun
from bench.flow.drain import STRANDED_S, Drained
from bench.flow.hot import HotRun
from bench.flow.timeouts import TimeoutRun, met

FLOW_SUITE = Suite("make bench-flow", "bench.flow", FLOW)
DRAIN_TARGET = 0.8  # keyed drain at least 0.8x unkeyed (issue 29)
HOT_TARGET = 2.0  # spread events' pickup p99 within 2x of unkeyed


@dataclass(frozen=True, slots=True)
class Sizes:
    events: int
    keys: int
    hot: int
    spread: int
    rate: float
    warmup_s: float
    crash_events: int
    crash_subjects: int
    probe_rate: float
    rounds: int


@dataclass
class FlowResults:
    machine: Machine
    began: float
    ended: float
    command: str
    sizes: Sizes
    drains: dict[str, list[Drained]] = field(default_factory=lambda: {"keyed": [], "unkeyed": []})
    hot: dict[str, list[HotRun]] = field(default_factory=lambda: {"keyed": [], "unkeyed": []})
    crashes: list[CrashRun] = field(default_factory=list)
    timeouts: list[TimeoutRun] = field(default_factory=list)
    engine: str = ""  # the last commit that changed workers/

    def rate(self, name: str) -> float:
        return statistics.median(d.rate for d in self.drains[name])

    def drain_ratio(self) -> float:
        return self.rate("keyed") / self.rate("unkeyed")

    def p99(self, name: str) -> float:
        return statistics.median(h.p99_ms for h in self.hot[name])

    def hot_ratio(self) -> float:
        return self.p99("keyed") / self.p99("unkeyed")

    def violations(self) -> int:
        return sum(len(c.verdict.violations) for c in self.crashes)


def _targets(r: FlowResults) -> list[str]:
    s = r.sizes
    runs = [f"{k.rate / u.rate:.2f}" for k, u in zip(*r.drains.values(), strict=True)]
    stranded = ", ".join(str(d.stranded) for d in r.drains["keyed"])
    p99s = ", ".join(f"{h.p99_ms:.1f}" for h in r.hot["keyed"])
    p99u = ", ".join(f"{h.p99_ms:.1f}" for h in r.hot["unkeyed"])
    worst = max((a for t in r.timeouts for a in t.attempts_s), default=0.0)
    reasons = ", ".join(sorted({t.reason for t in r.timeouts}))
    rows = head("target", "measured", "met", align="llr")
    rows += [
        f'| 1. {whole(s.events)} events over {whole(s.keys)} subjects, `key="subject"`, one '
        f"runworker: keyed drain >= {DRAIN_TARGET}x unkeyed | {r.drain_ratio():.2f}x "
        f"({whole(r.rate('keyed'))} vs {whole(r.rate('unkeyed'))} events/s, medians; each "
        f"round {', '.join(runs)}; stranded events each keyed round: {stranded}) "
        f"| {yes(r.drain_ratio() >= DRAIN_TARGET)} |",
        f"| 2. a subject with {whole(s.hot)} events beside {whole(s.spread)} spread ones: "
        f"spread pickup p99 keyed within {HOT_TARGET:g}x unkeyed | {r.hot_ratio():.2f}x "
        f"({r.p99('keyed'):.1f} vs {r.p99('unkeyed'):.1f} ms, medians; keyed {p99s}, "
        f"unkeyed {p99u} ms) | {_hot_met(r)} |",
        f"| 3. {s.crash_events} events over {s.crash_subjects} subjects, 2 runworkers, one "
        f"SIGKILLed: order, exclusion, once | {r.violations()} violations in "
        f"{len(r.crashes)} runs | {yes(r.violations() == 0)} |",
        f"| 4. a hung agent, `timeout_s=1`, `max_deliveries=3`: each attempt fails within "
        f"1.5 s, others served, dead-lettered `timeout` | longest attempt {worst:.2f} s; "
        f"reason {reasons} | {yes(all(met(t) for t in r.timeouts))} |",
    ]
    return rows


def _hot_met(r: FlowResults) -> str:
    """Met only if the hot backlog ran meanwhile: a stalled backlog competes with nothing.
    One at a time it need not finish: it must keep going while the spread events come."""
    stalled = [h.hot_done for h in r.hot["keyed"] if h.hot_done < HOT_GOING]
    if not stalled:
        return yes(r.hot_ratio() <= HOT_TARGET)
    return f"**no**: the hot backlog stalled ({', '.join(map(whole, stalled))} ran), not tested"


# Hot events that must have run in a keyed round for the spread ones to have competed with
# its hand-offs: one every 100 ms of the 20 s of publishing.
HOT_GOING = 200


def _drain_rows(r: FlowResults) -> list[str]:
    rows = head("agent", "events/s (median)", "each round", "stranded", "the rest's rate",
                "CPU per event: worker", "Valkey", align="lrlrrrr")  # fmt: skip
    for name, drains in r.drains.items():
        each = ", ".join(whole(d.rate) for d in drains)
        stranded = ", ".join(str(d.stranded) for d in drains)
        rest = statistics.median(d.rest_rate for d in drains)
        worker = statistics.median(d.worker_us for d in drains)
        valkey = statistics.median(d.valkey_us for d in drains)
        rows.append(
            f"| `{name}` | {whole(r.rate(name))} | {each} | {stranded} | {whole(rest)}/s "
            f"| {worker:.0f} µs | {valkey:.0f} µs |"
        )
    return rows


def _hot_rows(r: FlowResults) -> list[str]:
    rows = head("agent", "spread p50", "p99 (median run)", "max", "hot events done",
                "hot: first to last start", align="lrrrrr")  # fmt: skip
    for name, runs in r.hot.items():
        mid = sorted(runs, key=lambda h: h.p99_ms)[(len(runs) - 1) // 2]
        done = ", ".join(whole(h.hot_done) for h in runs)
        rows.append(
            f"| `{name}` | {mid.p50_ms:.2f} ms | {mid.p99_ms:.2f} ms | {mid.max_ms:.1f} ms "
            f"| {done} of {whole(r.sizes.hot)} | {mid.hot_s:.1f} s |"
        )
    return rows


def _crash_rows(r: FlowResults) -> list[str]:
    rows = head("run", "killed after", "drained in", "runs started", "cut short by the kill",
                "reruns", "violations", align="lrrrrrr")  # fmt: skip
    for n, c in enumerate(r.crashes, 1):
        v = c.verdict
        shown = "; ".join(v.violations[:3]) or "0"
        rows.append(
            f"| {n} | {c.killed_at} runs | {c.seconds:.1f} s | {v.runs} | {v.interrupted} "
            f"| {v.reruns} | {shown} |"
        )
    return rows


def _timeout_rows(r: FlowResults) -> list[str]:
    columns = ["run", "attempts (start to cancel)", "dead letter", "first start to letter"]
    columns += ["probes run meanwhile", "probe p99", "next of its subject"]
    rows = head(*columns, align="llrrrrl")
    for n, t in enumerate(r.timeouts, 1):
        attempts = ", ".join(f"{a:.2f} s" for a in t.attempts_s)
        after = "after the letter" if t.follower_after_dead else "**before the letter**"
        rows.append(
            f"| {n} | {attempts} | `{t.reason}`, {t.deliveries} deliveries "
            f"| {t.hung_to_dead_s:.1f} s | {t.normal_during} | {t.normal_p99_ms:.1f} ms | {after} |"
        )
    return rows


def render(r: FlowResults, notes: str) -> str:
    shown = about(r.machine)
    database = ("database", "SQLite (temp file, WAL)")
    engine = ("engine (`workers/`) last changed by", r.engine)
    s = r.sizes
    nl = "\n"
    how = (
        f"Each scenario runs real `runworker` processes (DEBUG off, `bench.flow.agents` only) "
        f"against a private Valkey and a fresh SQLite database (WAL), {s.rounds} round(s), "
        "the order of keyed and unkeyed alternating. 1: the events preloaded, then `runworker "
        "--concurrency 200 --batch-size 200 --burst` drains them (bench.engine's clock); "
        f"subjects drawn at random (seeded). An event that started {STRANDED_S:.0f} s or "
        "more after the drain's first is counted as stranded: the drain left it behind and "
        "the sweep found it after the claim idle time (60 s by default). 2: the worker waits "
        f"on an empty stream; the hot subject's {whole(s.hot)} events arrive at once, then "
        f"{whole(s.spread)} spread events (each its own subject) one at a time at "
        f"{s.rate:g}/s; pickup is handler start minus `sent_ns` (taken just before XADD), "
        f"the first {s.warmup_s:g} s of spread events left out of both. 3: 2 runworkers "
        "(`--concurrency 16 --claim-idle-ms 1500 --lease-ms 1000`); the agent sleeps 50 ms "
        "and RPUSHes its start and end, so the server's order of the records is the real "
        "order; one worker is SIGKILLed once a third of the runs ended; the survivor "
        "reclaims. 4: one runworker with the same timings and a 200 ms retry base; the hung "
        "event, a second event of its subject, then probe events of other subjects at "
        f"{s.probe_rate:g}/s until a second after the dead letter."
    )
    return f"""{FLOW.begin}
## Flow control

{FLOW_SUITE.generated(r.began, r.ended, r.command)}. Do not edit by hand: rerun it.
Per-key order and concurrency ([flow.md](flow.md)), issue 29's targets.

{facts([shown.machine, shown.server, database, shown.code, engine, shown.load])}

### Targets

{nl.join(_targets(r))}

{reflow(notes)}

### 1. Drain, keyed and unkeyed

{nl.join(_drain_rows(r))}

### 2. A hot subject beside spread ones

{nl.join(_hot_rows(r))}

### 3. A worker SIGKILLed mid-run

{nl.join(_crash_rows(r))}

### 4. A hung agent

{nl.join(_timeout_rows(r))}

### How it is measured

{reflow(how)}

{FLOW_SUITE.rerun("", [("--quick", "smaller sizes, 1 round; report to a temp file")])}
{FLOW.end}
"""


def summary(r: FlowResults) -> str:
    return (
        f"flow: drain keyed/unkeyed {r.drain_ratio():.2f}x, hot spread p99 "
        f"{r.hot_ratio():.2f}x, crash violations {r.violations()}, timeouts "
        f"{'met' if all(met(t) for t in r.timeouts) else 'NOT met'}"
    )
