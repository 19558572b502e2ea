"""The "Replay" block of docs/benchmarks.md (``make bench-replay``). Every other bench
writer keeps this block as it is (its markers are ``bench.common.report.REPLAY``)."""

from __future__ import annotations

from dataclasses import dataclass

from bench.common.machine import Machine
from bench.common.report import REPLAY, Suite, about, facts, head, reflow, whole, yes

REPLAY_SUITE = Suite("make bench-replay", "bench.replay", REPLAY)
DRAIN_TARGET = 0.8
PREVIEW_TARGET_S = 5.0


@dataclass(frozen=True, slots=True)
class Drain:
    events: int
    wall_s: float  # the runworker --burst process, start-up and all
    span_s: float  # its runs: the first one's start to the last one's end

    @property
    def per_s(self) -> float:
        return self.events / self.span_s


@dataclass(frozen=True, slots=True)
class Round:
    before: Drain  # the live drain just before the replay's (of the events it replays)
    replay: Drain
    after: Drain  # the live drain just after it (of new events)
    copy_s: float  # manage.py replay --force, the process as a whole

    @property
    def live_per_s(self) -> float:
        return (self.before.per_s + self.after.per_s) / 2

    @property
    def ratio(self) -> float:
        return self.replay.per_s / self.live_per_s

    @property
    def with_copy(self) -> float:
        """The replay's rate counting its copying too, over the live drains'."""
        return (self.replay.events / (self.replay.span_s + self.copy_s)) / self.live_per_s


@dataclass(frozen=True, slots=True)
class PreviewTiming:
    entries: int
    matching: int
    already_done: int
    timings_s: list[float]
    db_s: list[float]  # of each, the count in the database
    lua_s: list[float]  # of each, the server's own time in the counting script
    subject_matching: int
    subject_s: float  # the same range, one subject of 100
    cli_s: float  # manage.py replay --dry-run, the process as a whole


@dataclass(frozen=True, slots=True)
class ReplayResults:
    began: float
    ended: float
    command: str
    machine: Machine
    database: str
    rounds: list[Round]
    preview: PreviewTiming

    @property
    def median(self) -> Round:
        """The round of the median ratio (the lower middle one of an even number)."""
        ordered = sorted(self.rounds, key=lambda r: r.ratio)
        return ordered[(len(ordered) - 1) // 2]


def _seconds(values: list[float]) -> str:
    return ", ".join(f"{v:.2f}" for v in values)


def _targets(r: ReplayResults) -> list[str]:
    m, best = r.median, min(r.preview.timings_s)
    rows = [
        (
            f"replay of {whole(m.replay.events)} events into one agent drains at no less than "
            f"0.8x the live drain (the median of {len(r.rounds)} rounds)",
            f"{m.ratio:.2f}x ({whole(m.replay.per_s)} vs {whole(m.live_per_s)} events/s)",
            yes(m.ratio >= DRAIN_TARGET),
        ),
        (
            f"a dry-run preview over {whole(r.preview.entries)} entries answers within 5 s",
            f"{best:.2f} s (the best of {len(r.preview.timings_s)})",
            yes(best < PREVIEW_TARGET_S),
        ),
    ]
    top = ["| target (issue 31) | measured | met |", "| --- | --- | --- |"]
    return top + [f"| {what} | {measured} | {met} |" for what, measured, met in rows]


def _round(n: int, x: Round) -> str:
    return (
        f"| {n} | {whole(x.before.per_s)} | {x.copy_s:.1f} | {x.replay.span_s:.1f} "
        f"({x.replay.wall_s:.1f}) | {whole(x.replay.per_s)} | {whole(x.after.per_s)} | "
        f"**{x.ratio:.2f}x** | {x.with_copy:.2f}x |"
    )


def render(r: ReplayResults) -> str:
    mc, p = about(r.machine), r.preview
    n = whole(r.rounds[0].replay.events)
    took, db, lua = _seconds(p.timings_s), _seconds(p.db_s), _seconds(p.lua_s)
    columns = ("round", "live before, events/s", "copy, s", "replay drain, s (process)",
               "replay events/s", "live after, events/s", "ratio",
               "ratio with the copy")  # fmt: skip
    body = f"""{REPLAY.begin}
## Replay

{REPLAY_SUITE.generated(r.began, r.ended, r.command)}. Do not edit by hand: rerun it. See
[docs/replay.md](replay.md) for what replay does.

{facts([mc.machine, mc.server, ("database", r.database), mc.code, mc.load])}

{chr(10).join(_targets(r))}

{chr(10).join(head(*columns, align="rrrrrrrr"))}
{chr(10).join(_round(k + 1, x) for k, x in enumerate(r.rounds))}

A live drain: {n} new probe events published, then `runworker --burst` (batches of 200,
concurrency 200) runs them. A replay: `manage.py replay --agent bench.probe --force --from
<the first of the batch just drained live>` copies the same {n} back (a bulk job reading
and copying 2,000 entries a page: "copy", the process as a whole), and a second `runworker
--burst` runs each once more as a new run linked to the first. Live and replay drains
alternate (live 1, replay 1, live 2, ... live {len(r.rounds) + 1}), and each replay is
weighed against the mean of the live drains on either side of it: the machine getting
busier or quieter, and the database growing by every drain, count against neither. A
drain's time is its runs' span in the database, the first run's start to the last one's
end (in brackets: the process, start-up included). The target is read on the median
round.

The preview: the stream topped up to {whole(p.entries)} entries, then
`workers.replay.checked_preview` over all of them ({whole(p.matching)} of the agent's
events, {whole(p.already_done)} already done) took {took} s: the entries are counted in
the server by a Lua script in stretches of 20,000 (no call holds the server for more than
about 0.1 s; the server's own time in it: {lua} s), what the agent already did by one
count in the database ({db} s).
With a subject (one of 100: {whole(p.subject_matching)} events) it took
{p.subject_s:.2f} s; `manage.py replay --dry-run` took {p.cli_s:.2f} s as a whole, Django's
start-up included.

{REPRODUCE}
{REPLAY.end}
"""
    return reflow(body)


REPRODUCE = REPLAY_SUITE.rerun(
    "",
    [
        ("--quick", "5,000 events, 50,000 entries, one round, report to a temp file"),
        ("--sqlite", "SQLite even if PostgreSQL answers"),
    ],
)


def summary(r: ReplayResults) -> str:
    best = min(r.preview.timings_s)
    return (
        f"replay: drains at {r.median.ratio:.2f}x the live drain (median round); preview of "
        f"{whole(r.preview.entries)} entries in {best:.2f} s"
    )
