"""The "Partitions" block of docs/benchmarks.md (``make bench-partitions``). No Django here."""

from __future__ import annotations

import statistics
from dataclasses import dataclass

from bench.common.machine import Machine
from bench.common.report import PARTITIONS, Suite, about, facts, reflow, whole

PARTITIONS_SUITE = Suite("make bench-partitions", "bench.partitions", PARTITIONS)
# The partition counts compared, on one node; the first is the baseline.
COUNTS = (1, 8)
TARGET = 0.90  # P=8 at most 10% slower than P=1 (issue 17)


@dataclass(frozen=True, slots=True)
class PartitionResults:
    machine: Machine
    began: float
    ended: float
    command: str
    database: str
    events: int
    rounds: int
    rates: dict[int, list[float]]  # partitions -> events/s of each round, in order

    def median(self, count: int) -> float:
        return statistics.median(self.rates[count])

    def ratio(self, count: int) -> float:
        return self.median(count) / self.median(COUNTS[0])

    def spread(self) -> float:
        runs = self.rates[COUNTS[0]]
        return max(abs(v / self.median(COUNTS[0]) - 1) for v in runs)


def _rows(r: PartitionResults) -> list[str]:
    head = "| partitions | events/s (median) | rounds, in order | vs 1 partition | target |"
    rows = [head, "| --- " * 5 + "|"]
    for count in COUNTS:
        runs = ", ".join(whole(v) for v in r.rates[count])
        if count == COUNTS[0]:
            target = "baseline"
        else:
            met = "met" if r.ratio(count) >= TARGET else "**not met**"
            target = f">= {TARGET:.2f}x: {met}"
        rows.append(
            f"| {count} | **{whole(r.median(count))}** | {runs} "
            f"| {r.ratio(count):.2f}x | {target} |"
        )
    return rows


def render(r: PartitionResults) -> str:
    shown = about(r.machine)
    database = ("database", r.database)
    nl = "\n"
    text = (
        f"The cost of partitioning on one server: the same events drained by one worker process "
        f"reading one stream, then {COUNTS[-1]} partition streams (one read loop per "
        f"partition, the process's concurrency shared among them). The 1-partition rounds lie "
        f"within {r.spread():.1%} of their median in this run, the noise against which to read "
        "the ratio. Partitions pay off on a cluster, where each master serves its own; on one "
        "node they only add read loops. The cluster comparison (1 node against 3 masters) is "
        "not measured yet (docs/scaling.md)."
    )
    return f"""{PARTITIONS.begin}
## Partitions: one stream against {COUNTS[-1]} on one node

{PARTITIONS_SUITE.generated(r.began, r.ended, r.command)}. Do not edit by hand: rerun it.

{facts([shown.machine, shown.server, database, shown.code, shown.load])}

{nl.join(_rows(r))}

{reflow(text)}

- **What runs**: one in-process worker process (``partition_workers``, as runworker runs)
  in burst mode drains {whole(r.events)} preloaded events of a no-op async agent per
  partition count, spread over the partitions as producers spread them; {r.rounds} rounds,
  the order alternating, after one unreported warm-up round each.

{PARTITIONS_SUITE.rerun("", [("--quick", "smoke run, report to a temp file")])}
{PARTITIONS.end}
"""


def summary(r: PartitionResults) -> str:
    parts = [f"P={c} {whole(r.median(c))}/s ({r.ratio(c):.2f}x)" for c in COUNTS]
    return "partitions: " + ", ".join(parts)
