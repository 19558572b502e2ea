"""The "Errors grouped" block of docs/benchmarks.md (``python -m bench.errors``). Every
other bench writer keeps this block as it is (its markers are ``bench.common.report.ERRORS``)."""

from __future__ import annotations

from dataclasses import dataclass

from bench.common.machine import Machine
from bench.common.report import ERRORS, Suite, about, facts, head, reflow, whole, yes

# No make target (the Makefile is another change's): the module is the command.
ERRORS_SUITE = Suite("python -m bench.errors", "bench.errors", ERRORS)
TARGET_MS = 1_000
DATABASE = "SQLite (temp file)"


@dataclass(frozen=True, slots=True)
class Timing:
    path: str
    p50_ms: float
    p95_ms: float
    max_ms: float


@dataclass(frozen=True, slots=True)
class DataSet:
    letters: int
    groups: int
    written_per_s: float  # dead letters/s through queue_dead_letter, fingerprint included
    overview: Timing
    detail: Timing


@dataclass(frozen=True, slots=True)
class ErrorsResults:
    began: float
    ended: float
    command: str
    machine: Machine
    sets: list[DataSet]
    fingerprint_us: float
    failed_runs: int


def _row(ds: DataSet) -> str:
    o, d = ds.overview, ds.detail
    return (
        f"| {whole(ds.letters)} | {whole(ds.groups)} | {o.p50_ms:.1f} / **{o.p95_ms:.1f}** / "
        f"{o.max_ms:.1f} | {d.p50_ms:.1f} / {d.p95_ms:.1f} / {d.max_ms:.1f} | "
        f"{whole(ds.written_per_s)} |"
    )


def render(r: ErrorsResults) -> str:
    mc = about(r.machine)
    worst = max(ds.overview.p95_ms for ds in r.sets)
    letters = whole(r.sets[0].letters)
    met = yes(worst < TARGET_MS)
    columns = ("letters", "groups", "/errors/ p50 / **p95** / max, ms",
               "a group's page (50 letters), ms", "letters written/s")  # fmt: skip
    body = f"""{ERRORS.begin}
## Errors grouped

{ERRORS_SUITE.generated(r.began, r.ended, r.command)}. Do not edit by hand: rerun it. See
[the Errors page](console.md#errors) for what is measured.

{facts([mc.machine, mc.server, ("database", DATABASE), mc.code, mc.load])}

| target (issue 32) | measured | met |
| --- | --- | --- |
| error grouping of {letters} dead letters: the page under 1 s | p95 {worst:.1f} ms | {met} |

{chr(10).join(head(*columns, align="rrrrr"))}
{chr(10).join(_row(ds) for ds in r.sets)}

Each data set's letters were written through the engine's dead-letter path
(`queue_dead_letter`: the letter, its fingerprint and its group in one script call, in
pipelines of 1,000), each with a real traceback whose order id and line numbers vary
from letter to letter, so look-alikes fall into one group per shape. The page reads one
hash per stream (`{{<stream>:dead}}:errors`) and the dead streams' lengths: its time
follows the number of groups, not of letters. A group's page reads 50 member ids and
those 50 letters. Server-side time around Django's `Client.get` (routing, session, view,
template), after 3 warm-up fetches. Each fetch of `/errors/` also groups the newest
{whole(r.failed_runs)} failed runs from the database (its whole window: {whole(r.failed_runs)}
rows with tracebacks in 5 shapes), fingerprinted as they are read. Fingerprinting one
traceback (parse, normalise, hash) takes {r.fingerprint_us:.0f} µs.

{REPRODUCE}
{ERRORS.end}
"""
    return reflow(body)


REPRODUCE = ERRORS_SUITE.rerun(
    "",
    [
        ("--quick", "5,000 letters, report to a temp file"),
        ("--letters 1000000", "another size"),
    ],
)


def summary(r: ErrorsResults) -> str:
    shown = ", ".join(f"{ds.groups} groups p95 {ds.overview.p95_ms:.1f} ms" for ds in r.sets)
    return f"errors: /errors/ over {whole(r.sets[0].letters)} dead letters: {shown}"
