"""The "Tracing" block of docs/benchmarks.md (``make bench-tracing``). No Django here."""

from __future__ import annotations

import statistics
from dataclasses import dataclass

from bench.common.machine import Machine
from bench.common.report import TRACING, Suite, about, facts, reflow, whole

TRACING_SUITE = Suite("make bench-tracing", "bench.tracing", TRACING)
OFF = "off"
# Mode -> sampling ratio; None: no provider, tracing off (the default deployment).
MODES: dict[str, float | None] = {OFF: None, "on, 1%": 0.01, "on, 100%": 1.0}


@dataclass(frozen=True, slots=True)
class TracingResults:
    machine: Machine
    began: float
    ended: float
    command: str
    database: str
    events: int
    rounds: int
    rates: dict[str, list[float]]  # mode -> events/s of each round, in order

    def median(self, mode: str) -> float:
        return statistics.median(self.rates[mode])

    def ratio(self, mode: str) -> float:
        return self.median(mode) / self.median(OFF)

    def added_us(self, mode: str) -> float:
        """What ``mode`` adds to each event, in microseconds of the worker's time."""
        return (1 / self.median(mode) - 1 / self.median(OFF)) * 1e6

    def spread(self) -> float:
        """How far "off"'s own rounds lie from their median: the run's noise."""
        runs = self.rates[OFF]
        return max(abs(v / self.median(OFF) - 1) for v in runs)


def _rows(r: TracingResults) -> list[str]:
    head = "| tracing | events/s (median) | rounds, in order | vs off | added per event |"
    rows = [head, "| --- " * 5 + "|"]
    for mode in MODES:
        runs = ", ".join(whole(v) for v in r.rates[mode])
        added = f"{r.added_us(mode):.0f} µs" if mode != OFF else "-"
        rows.append(
            f"| {mode} | **{whole(r.median(mode))}** | {runs} | {r.ratio(mode):.2f}x | {added} |"
        )
    return rows


def render(r: TracingResults) -> str:
    shown = about(r.machine)
    database = ("database", r.database)
    nl = "\n"
    text = (
        f"Off is a module-level boolean checked once per batch and once per attempt; its "
        f"rounds lie within {r.spread():.1%} of their median in this run, the noise against "
        "which to read the other rows. On means an SDK provider, a batch span processor and an "
        "exporter that drops the spans: the engine's own cost, not a collector's. The agent "
        'does nothing, so the ratios are the worst case; "added per event" is what to set '
        "beside a real agent's model calls, which take milliseconds. An attempt the sampler "
        "drops makes one span decision and no child spans."
    )
    return f"""{TRACING.begin}
## Tracing: OpenTelemetry on and off

{TRACING_SUITE.generated(r.began, r.ended, r.command)}. Do not edit by hand: rerun it.

{facts([shown.machine, shown.server, database, shown.code, shown.load])}

{nl.join(_rows(r))}

{reflow(text)}

- **What runs**: one in-process worker in burst mode drains {whole(r.events)} preloaded
  events of a no-op async agent per mode; {r.rounds} rounds, the order of the modes
  rotating, after one unreported warm-up round.

{TRACING_SUITE.rerun("", [("--quick", "smoke run, report to a temp file")])}
{TRACING.end}
"""


def summary(r: TracingResults) -> str:
    parts = [f"{m} {whole(r.median(m))}/s ({r.ratio(m):.2f}x)" for m in MODES]
    return "tracing: " + ", ".join(parts)
