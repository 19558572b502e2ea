"""The "Delayed events" block of docs/benchmarks.md (``python -m bench.timers``). Every other
bench writer keeps this block as it is (its markers are ``bench.common.report.TIMERS``)."""

from __future__ import annotations

from dataclasses import dataclass, field

from bench.common.machine import Machine
from bench.common.report import TIMERS, Suite, about, facts, head, reflow, whole, yes

# No make target yet (the Makefile is another change's): the module is the command.
TIMERS_SUITE = Suite("make bench-timers", "bench.timers", TIMERS)
TARGET_P99_MS = 1_000


@dataclass(frozen=True, slots=True)
class Idle:
    state: str
    commands_s: float
    by_command: dict[str, float] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Lateness:
    rate: float
    seconds: float
    events: int
    delay_ms: int
    to_stream: list[int]  # ms, sorted
    to_agent: list[int]  # ms, sorted

    @staticmethod
    def p(values: list[int], q: float) -> int:
        return values[min(len(values) - 1, round(q * (len(values) - 1)))]


@dataclass(frozen=True, slots=True)
class TimersResults:
    began: float
    ended: float
    command: str
    machine: Machine
    database: str
    workers: int
    idle: list[Idle]
    idle_s: float
    late: Lateness


def _lags(values: list[int]) -> str:
    p = Lateness.p
    return f"{p(values, 0.5)} / {p(values, 0.95)} / **{p(values, 0.99)}** / {values[-1]} ms"


def _by_command(one: Idle, base: Idle) -> str:
    extra = {k: v - base.by_command.get(k, 0.0) for k, v in one.by_command.items()}
    shown = [
        f"{k} {v:+.2f}"
        for k, v in sorted(extra.items(), key=lambda kv: -abs(kv[1]))
        if abs(v) >= 0.01
    ]
    return ", ".join(shown[:4]) or "none"


def render(r: TimersResults) -> str:
    late = r.late
    p99 = late.p(late.to_stream, 0.99)
    base = r.idle[0]
    idle_rows = [
        f"| {one.state} | {one.commands_s:.2f} | {one.commands_s - base.commands_s:+.2f} | "
        f"{_by_command(one, base)} |"
        for one in r.idle
    ]
    mc = about(r.machine)
    met = yes(p99 <= TARGET_P99_MS)
    columns = ("at rest, 2 runworkers", "commands/s", "vs nothing", "the difference, by command")
    idle_head = "\n".join(head(*columns, align="lrrl"))
    body = f"""{TIMERS.begin}
## Delayed events

{TIMERS_SUITE.generated(r.began, r.ended, r.command)}. Do not edit by hand: rerun it. See
[timers](timers.md) for what is measured.

{facts([mc.machine, mc.server, ("database", r.database), mc.code, mc.load])}

| target (issue 30) | measured | met |
| --- | --- | --- |
| at {whole(late.rate)} delayed events/s, p99 lateness at most 1 s | {p99} ms | {met} |

{chr(10).join(head("lateness", "p50 / p95 / **p99** / max", align="lr"))}
| due to stream entry (the timer's move) | {_lags(late.to_stream)} |
| due to the agent's start | {_lags(late.to_agent)} |

{whole(late.events)} events held at {whole(late.rate)}/s for {late.seconds:g} s (in batches
of 10 per publish call), each due {late.delay_ms / 1000:g} s after its hold, while
{r.workers} `runworker` processes (`--concurrency 32`, the probe agent) moved and ran them.
An event's lateness to the stream is its entry id's millisecond time minus its due time
(both the server's clock); to the agent, the probe's first clock reading minus the due time.

{idle_head}
{chr(10).join(idle_rows)}

The server's commands/s over a {r.idle_s:g} s window after 3 s at rest (the window's own
INFO reads not counted), each state from an empty server with the history recorder off
(`STREAMDESK_HISTORY_RECORDER=0`), so what differs is the timer. With nothing delayed and
no schedule the timer candidates send nothing: they wait for a wake-up on the worker
process's one pub/sub connection. With something to wait for, the holder renews its lease
and looks once per 20 s (five or six commands, those inside a script counted one each), and
the standby tries the lease and reads its PTTL about as often (four): about 0.5 commands/s
for the two, the rest of the difference being the window's noise (the engine's own
housekeeping).

{REPRODUCE}
{TIMERS.end}
"""
    return reflow(body)


REPRODUCE = TIMERS_SUITE.rerun(
    "",
    [
        ("--quick", "smoke run, report to a temp file"),
        ("--rate 2000", "another load (delayed events/s)"),
        ("--sqlite", "SQLite even when PostgreSQL answers"),
    ],
)


def summary(r: TimersResults) -> str:
    late = r.late
    idle = ", ".join(f"{one.state}: {one.commands_s:.2f}/s" for one in r.idle)
    return (
        f"timers: at {whole(late.rate)}/s, lateness to the stream p99 "
        f"{late.p(late.to_stream, 0.99)} ms, to the agent p99 {late.p(late.to_agent, 0.99)} ms; "
        f"at rest {idle}"
    )
