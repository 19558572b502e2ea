"""The "Agent runtime" block of docs/benchmarks.md (``make bench-runtime``).

Every other bench writer keeps this block as it is (its markers are
``bench.common.report.RUNTIME``); this writer keeps theirs. No Django here.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass

from bench.common.machine import Machine
from bench.common.report import RUNTIME, RUNTIME_SUITE, about, facts, reflow, whole
from bench.runtime.agents import BASELINE, BUDGET, FIRST_STEP, LATER_STEP, SUBJECTS, TOOL

TIMED = (
    (FIRST_STEP, "`ctx.step`, an event's first (loads its stored steps, then stores)"),
    (LATER_STEP, "`ctx.step`, a later one (stores)"),
    (TOOL, "`ctx.tool` take (one Lua call)"),
)


@dataclass(frozen=True, slots=True)
class RuntimeResults:
    machine: Machine
    began: float
    ended: float
    command: str
    database: str
    events: int
    rounds: int
    concurrency: int
    batch: int
    block_ms: int
    rates: dict[str, list[float]]  # subject key -> events/s of each round, in order
    timings_ms: dict[str, list[float]]  # Timings kind -> every sample

    def median(self, key: str) -> float:
        return statistics.median(self.rates[key])

    def ratio(self, key: str) -> float:
        return self.median(key) / self.median(BASELINE)

    def added_ms(self, key: str) -> float:
        """Worker time added per event: 1/rate - 1/baseline rate."""
        return 1000 / self.median(key) - 1000 / self.median(BASELINE)


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def _rates(r: RuntimeResults) -> list[str]:
    head = ("agent", "per event", "events/s (median)", "rounds, in order", "vs baseline")
    rows = [f"| {' | '.join(head)} | added per event |", "| --- " * 6 + "|"]
    for s in SUBJECTS:
        runs = ", ".join(whole(v) for v in r.rates[s.key])
        added = "" if s.key == BASELINE else f"{r.added_ms(s.key):+.2f} ms"
        rows.append(
            f"| {s.key} | {s.does} | **{whole(r.median(s.key))}** | {runs} "
            f"| {r.ratio(s.key):.2f}x | {added} |"
        )
    return rows


def _timings(r: RuntimeResults) -> list[str]:
    rows = ["| call, timed inside the agent | samples | p50 | p95 |", "| --- | --- | --- | --- |"]
    for kind, label in TIMED:
        ms = r.timings_ms.get(kind, [])
        if ms:
            p50, p95 = percentile(ms, 0.50), percentile(ms, 0.95)
            rows.append(f"| {label} | {len(ms):,} | {p50:.2f} ms | {p95:.2f} ms |")
    return rows


def _bound(r: RuntimeResults) -> str:
    """Why a step agent's rate is what it is: its slot is held while the step is awaited."""
    ms = r.timings_ms.get(FIRST_STEP)
    if not ms or "step" not in r.rates:
        return ""
    mean = statistics.mean(ms)
    text = (
        "An agent holds its slot while it awaits a step, so a one-step agent's rate is about "
        f"slots / step wait: {r.concurrency} / {mean:.1f} ms (the mean of every event's first "
        f"step) = {whole(r.concurrency * 1000 / mean)} events/s; measured: "
        f"{whole(r.median('step'))}. The step's wait is mostly the worker's "
        "one database-writer thread: the saves of every agent waiting at once go together "
        "(three queries for the lot) into the next grouped transaction, behind the one "
        "running (runs finished, timeline rows), so a no-op step costs a commit's wait; a "
        "step around a model call (seconds) hardly notices. A take's awaited time includes "
        "waiting for the busy event loop; its cost per event is in the first table."
    )
    return reflow(text) + "\n"


def render(r: RuntimeResults) -> str:
    mc = r.machine
    shown = about(mc)
    database = ("database", f"{r.database} (runs, timeline and stored steps)")
    nl = "\n"
    return f"""{RUNTIME.begin}
## Agent runtime: durable steps and rate budgets

{RUNTIME_SUITE.generated(r.began, r.ended, r.command)}. Do not edit by hand: rerun it.
Every figure below comes from this one run; read the ratios to the baseline (measured
beside it, on a shared and noisy machine) before the absolute rates.

{facts([shown.machine, shown.server, database, shown.code, shown.load])}

{nl.join(_rates(r))}

{nl.join(_timings(r))}

{_bound(r)}
- **What runs**: one in-process `workers.engine.worker.Worker` in burst mode (concurrency
  {r.concurrency}, batches of {r.batch}, an empty read blocks {r.block_ms} ms, timeline on,
  `DEBUG=0`) drains {whole(r.events)} preloaded events of one agent's type. A round times
  that drain, worker start to exit, for each agent in turn; the order rotates by one each
  round; {r.rounds} rounds follow one unreported warm-up round. Redis is flushed and the
  runs, timeline and step tables emptied before every drain.
- **The agents** are async and do nothing else. A step's function is an async echo of the
  event's data (no thread hop); the budget `{BUDGET.name}` (rate {BUDGET.rate:,.0f}/s,
  burst {BUDGET.burst:,}) never runs dry, so no take is deferred. "Added per event" is
  1/rate minus 1/baseline rate: worker time with {r.concurrency} agents overlapping, not
  the latency one event sees. The second table times the awaited call itself, queueing
  included.

{REPRODUCE}
{RUNTIME.end}
"""


REPRODUCE = RUNTIME_SUITE.rerun(
    "",
    [
        ("--quick", "smoke run, report to a temp file"),
        ("--sqlite", "SQLite even when PostgreSQL answers"),
    ],
)


def summary(r: RuntimeResults) -> str:
    parts = [f"{s.key} {whole(r.median(s.key))}/s ({r.ratio(s.key):.2f}x)" for s in SUBJECTS]
    return f"runtime ({r.database}): " + ", ".join(parts)
