"""The "Idle workers" block of docs/benchmarks.md (``make bench-idle``). No Django here."""

from __future__ import annotations

import textwrap
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass

from bench.common.machine import Machine
from bench.common.report import IDLE, WIDTH, Suite, about, facts, head, reflow, yes
from bench.idle.measure import Idle
from bench.idle.purposes import MEANING, ORDER, Classifier, Floor, Traffic
from bench.idle.subjects import FLEET, STREAMDESK, SYSTEMS, Subject

IDLE_SUITE = Suite("make bench-idle", "bench.idle", IDLE)
MIB_KB = 1024
# Issue 28's targets.
ONE_COMMANDS, ONE_CPU_MS = 5.0, 2.0  # one idle runworker, everything included
FLEET_COMMANDS, FLEET_CPU_MS = 10.0, 20.0  # runworker --processes 10, all its processes
FURTHER_COMMANDS = 0.5  # what each further idle worker may add
PG_CONNECTIONS = 0


@dataclass(frozen=True, slots=True)
class IdleResults:
    machine: Machine
    began: float
    ended: float
    command: str
    database: str  # runworker's: "PostgreSQL 16.4 (...)" or "SQLite (temp file)"
    seconds: float  # the window asked for
    warmup_s: float
    floor: Floor
    runs: list[Idle]
    skipped: list[tuple[Subject, str]]

    def find(self, system: str, workers: int) -> Idle | None:
        for run in self.runs:
            if run.subject.system == system and run.subject.workers == workers:
                return run
        return None


def _cell(text: str) -> str:
    """``text`` in a table cell: commandstats' ``xinfo|stream`` would end the cell."""
    return text.replace("|", "\\|")


def _n(value: float) -> str:
    return f"{value:.2f}" if value < 10 else f"{value:.1f}"


def _mb(run: Idle) -> str:
    return f"{run.rss_kb / MIB_KB:.0f}"


def _further(one: Idle, many: Idle) -> float:
    return (many.commands - one.commands) / (many.subject.workers - one.subject.workers)


def _target_rows(r: IdleResults) -> list[str]:
    rows = head("target", "measured", "met", align="llr")
    one, many = r.find(STREAMDESK, 1), r.find(STREAMDESK, FLEET)
    fleet = f"`runworker --processes {FLEET}`"
    if one is not None:
        rows.append(
            f"| 1 idle `runworker`: at most {ONE_COMMANDS:g} Redis commands/s | "
            f"{_n(one.commands)} | {yes(one.commands <= ONE_COMMANDS)} |"
        )
        rows.append(
            f"| 1 idle `runworker`: at most {ONE_CPU_MS:g} ms CPU/s | "
            f"{_n(one.cpu_ms)} | {yes(one.cpu_ms <= ONE_CPU_MS)} |"
        )
    if many is not None:
        rows.append(
            f"| {fleet} at rest: at most {FLEET_COMMANDS:g} Redis commands/s | "
            f"{_n(many.commands)} | {yes(many.commands <= FLEET_COMMANDS)} |"
        )
        rows.append(
            f"| {fleet} at rest: at most {FLEET_CPU_MS:g} ms CPU/s, all its processes | "
            f"{_n(many.cpu_ms)} ({many.processes} processes) | "
            f"{yes(many.cpu_ms <= FLEET_CPU_MS)} |"
        )
    if one is not None and many is not None:
        further = _further(one, many)
        rows.append(
            f"| each further idle worker: at most {FURTHER_COMMANDS:g} Redis commands/s | "
            f"{_n(further)} (({_n(many.commands)} - {_n(one.commands)}) / {FLEET - 1}) | "
            f"{yes(further <= FURTHER_COMMANDS)} |"
        )
    counted = [run for run in r.runs if run.pg_connections is not None]
    if counted:
        most = max(counted, key=lambda run: run.pg_connections or 0)
        rows.append(
            f"| PostgreSQL connections an idle runworker holds: {PG_CONNECTIONS} | "
            f"{most.pg_connections} (the most, {most.subject.shown}) | "
            f"{yes(most.pg_connections == PG_CONNECTIONS)} |"
        )
    else:
        rows.append("| PostgreSQL connections an idle runworker holds: 0 | not measured | - |")
    return rows


def _side_by_side(r: IdleResults) -> list[str]:
    rows = head(
        "idle workers",
        "1: commands/s",
        "1: CPU ms/s",
        "1: memory MB",
        f"{FLEET}: commands/s",
        f"{FLEET}: CPU ms/s",
        f"{FLEET}: memory MB",
        "each further worker, commands/s",
        align="lrrrrrrr",
    )
    for system in SYSTEMS:
        one, many = r.find(system, 1), r.find(system, FLEET)
        if one is None and many is None:
            continue
        cells = [f"`{system}`" if system == STREAMDESK else system]
        for run in (one, many):
            cells += ["-"] * 3 if run is None else [_n(run.commands), _n(run.cpu_ms), _mb(run)]
        cells.append(_n(_further(one, many)) if one and many else "-")
        rows.append(f"| {' | '.join(cells)} |")
    return rows


def _top(run: Idle, count: int = 3) -> str:
    ranked = sorted(run.calls.items(), key=lambda kv: (-kv[1], kv[0]))[:count]
    return ", ".join(f"{name} {_n(calls / run.seconds)}" for name, calls in ranked) or "none"


def _every_run(r: IdleResults) -> list[str]:
    rows = head(
        "command",
        "processes",
        "Redis commands/s",
        "worker CPU, ms per s",
        "memory MB (RSS summed)",
        "PostgreSQL connections",
        "busiest commands, per s",
        align="lrrrrrl",
    )
    for run in r.runs:
        pg = "-" if run.pg_connections is None else str(run.pg_connections)
        rows.append(
            f"| {run.subject.shown} | {run.processes} | {_n(run.commands)} | {_n(run.cpu_ms)} "
            f"| {_mb(run)} | {pg} | {_cell(_top(run))} |"
        )
    return rows


def traffic(run: Idle) -> list[Traffic]:
    return Classifier().classify(run.lines)


def _uses(rows: Iterable[Traffic]) -> dict[str, list[str]]:
    """Command name -> the purposes it served (script-run commands marked)."""
    uses: dict[str, list[str]] = defaultdict(list)
    for t in rows:
        what = t.purpose if t.sent else f"{t.purpose} (run by a script)"
        if what not in uses[t.name]:
            uses[t.name].append(what)
    return uses


def _by_name(one: Idle, many: Idle) -> list[str]:
    rows = head("command", "1 worker, per s", f"{FLEET} workers, per s", "what for", align="lrrl")
    uses = _uses([*traffic(one), *traffic(many)])
    names = sorted(set(one.calls) | set(many.calls), key=lambda n: (-many.rate(n), n))
    for name in names:
        what = ", ".join(uses.get(name, [])) or "not seen by MONITOR"
        rows.append(f"| {_cell(name)} | {_n(one.rate(name))} | {_n(many.rate(name))} | {what} |")
    rows.append(f"| **all** | **{_n(one.commands)}** | **{_n(many.commands)}** | |")
    return rows


@dataclass(frozen=True, slots=True)
class Use:
    """One purpose's commands in a run: per s run (with what scripts ran) and sent."""

    ran: float = 0.0
    sent: float = 0.0
    commands: str = "-"  # the commands sent, with their keys; then what scripts ran


def by_purpose(run: Idle) -> dict[str, Use]:
    rows = traffic(run)
    out: dict[str, Use] = {}
    for purpose in dict.fromkeys(t.purpose for t in rows):
        mine = [t for t in rows if t.purpose == purpose]
        sent = list(dict.fromkeys(f"{t.name} {t.key}".strip() for t in mine if t.sent))
        scripted = list(dict.fromkeys(t.name for t in mine if not t.sent))
        shown = "; ".join(sent) + (f"; in scripts: {', '.join(scripted)}" if scripted else "")
        out[purpose] = Use(
            sum(t.run for t in mine) / run.seconds, sum(t.sent for t in mine) / run.seconds, shown
        )
    return out


def _purpose_rows(r: IdleResults, one: Idle, many: Idle) -> list[str]:
    rows = head(
        "purpose",
        "1 worker: run/s (sent/s)",
        "floor",
        f"{FLEET} workers: run/s (sent/s)",
        "floor",
        f"commands ({FLEET} workers)",
        align="lrrrrl",
    )
    mine, theirs = by_purpose(one), by_purpose(many)
    floor_one, floor_many = r.floor.per_purpose(1), r.floor.per_purpose(FLEET)
    for purpose in ORDER:
        if purpose not in mine and purpose not in theirs and purpose not in floor_one:
            continue
        cells = [purpose]
        for seen, floor in ((mine, floor_one), (theirs, floor_many)):
            use = seen.get(purpose, Use())
            cells += [f"{_n(use.ran)} ({_n(use.sent)})", _n(floor.get(purpose, 0.0))]
        cells.append(_cell(theirs.get(purpose, Use()).commands))
        rows.append(f"| {' | '.join(cells)} |")
    return rows


def floor_text(r: IdleResults) -> str:
    f = r.floor
    return (
        "**The floor of a correct worker at rest.** Idle, a worker must still wait for work: "
        f"one blocking XREADGROUP per block time ({f.block_s:g} s) per partition loop; and say "
        f"it is alive: one heartbeat command per heartbeat period ({f.heartbeat_s:g} s). The "
        "fleet as a whole must sweep each group for entries a dead worker left pending: one "
        f"XAUTOCLAIM per claim idle time ({f.claim_idle_s:g} s) whatever the fleet's size, "
        "each worker's share a part of it; and keep the console's history: one recorder tick "
        f"every {f.tick_s:g} s for the whole fleet, one command at least. At runworker's "
        f"defaults that is {_n(f.total(1))} commands/s for one worker and "
        f"{_n(f.total(FLEET))} for {FLEET}, each further worker adding {_n(f.per_worker())} "
        "(its reads and heartbeats)."
    )


def _versus(measured: float, floor: float) -> str:
    gap = measured - floor
    return f"{_n(abs(gap))} {'above' if gap >= 0 else 'below'} the floor"


def _bullet(text: str) -> str:
    return textwrap.fill(text, WIDTH, initial_indent="- ", subsequent_indent="  ")


def rest_text(r: IdleResults, one: Idle, many: Idle) -> str:
    """What each command/s beyond the floor is for, from the purposes of ``many``'s run."""
    intro = (
        f"Measured: {_n(one.commands)} commands/s for one worker "
        f"({_versus(one.commands, r.floor.total(1))}) and {_n(many.commands)} for {FLEET} "
        f"({_versus(many.commands, r.floor.total(FLEET))}). Beyond the floor, with {FLEET} "
        "workers (commands run per s, with what scripts run):"
    )
    floor = r.floor.per_purpose(FLEET)
    seen = by_purpose(many)
    bullets = []
    for purpose in ORDER:
        use = seen.get(purpose)
        beyond = 0.0 if use is None else use.ran - floor.get(purpose, 0.0)
        if use is None or beyond < 0.005:
            continue
        over = f" over its floor of {_n(floor[purpose])}" if purpose in floor else ""
        bullets.append(f"**{purpose}**: {_n(beyond)}{over}: {MEANING[purpose]} ({use.commands}).")
    under = [p for p in floor if seen.get(p, Use()).ran < floor[p] - 0.005]
    if under:
        shown = ", ".join(f"{p} {_n(seen.get(p, Use()).ran)} of {_n(floor[p])}" for p in under)
        bullets.append(
            f"Below the floor: {shown} (a period longer than the window sends nothing in "
            "some windows; or a cheaper way than the floor assumes)."
        )
    if not bullets:
        bullets.append("Nothing: every command is the floor's.")
    return "\n".join([reflow(intro), "", *(_bullet(b) for b in bullets)])


def _notes(r: IdleResults) -> str:
    window = f"{r.seconds:g} s"
    skipped = "".join(f"\n- **Skipped**: {s.shown}: {why}." for s, why in r.skipped)
    return f"""- **What runs**: each subject alone against the bench's private Valkey, emptied
  first; runworker on a fresh migrated database (above) as deployed (`DEBUG=0`, no demo
  agents, its defaults otherwise), a peer with one no-op task (bench/idle/peers/) and its
  library's defaults. Once ready (every worker's heartbeat in the workers index, or a peer's
  log saying so) and {r.warmup_s:g} s more of warm-up: `CONFIG RESETSTAT`, {window}, then
  `INFO commandstats` (the bench's own `CONFIG RESETSTAT` removed).
- **What counts**: Redis commands are commandstats' calls, as the issue's table counted them:
  a script call and each command the script runs (so "run"; "sent" counts what crossed the
  network). CPU is utime + stime of every process of the fleet (/proc, in 10 ms ticks: one
  tick is {10 / r.seconds:.2f} ms/s at this window); memory the sum of their RSS at the end (pages
  forked processes share count in each). What each command is for comes from `MONITOR` on a
  connection of its own (bench/idle/purposes.py: by key and connection; MONITOR costs the
  server, not the workers).{skipped}"""


def render(r: IdleResults) -> str:
    shown = about(r.machine)
    nl = "\n"
    one, many = r.find(STREAMDESK, 1), r.find(STREAMDESK, FLEET)
    detail = ""
    if one is not None and many is not None:
        detail = f"""
### runworker's commands by name

`runworker` (1 process) and `runworker --processes {FLEET}`, per second over the window.

{nl.join(_by_name(one, many))}

### What they are for

{nl.join(_purpose_rows(r, one, many))}

{reflow(floor_text(r))}

{rest_text(r, one, many)}
"""
    window = ("window", f"{r.seconds:g} s per subject, after it is ready and {r.warmup_s:g} s")
    return f"""{IDLE.begin}
## Idle workers

{IDLE_SUITE.generated(r.began, r.ended, r.command)}. Do not edit by hand: rerun it.

{facts([shown.machine, shown.server, ("database", r.database), shown.code, shown.load, window])}

### Targets

{nl.join(_target_rows(r))}

### Side by side

{nl.join(_side_by_side(r))}

### Every run

{nl.join(_every_run(r))}
{detail}
{_notes(r)}

{IDLE_SUITE.rerun(" (60 s a subject, about 15 min)", OPTIONS)}
{IDLE.end}
"""


OPTIONS = [
    ("--quick", "5 s windows after 1 s of warm-up, report to a temp file"),
    ("--seconds 30", "the window per subject (60)"),
    ("--only runworker,arq-10", "these subjects only (the others: --help)"),
    ("--sqlite", "runworker on SQLite even when PostgreSQL answers"),
    ("--ref HEAD", "the code of a git ref, not the working tree (bench/ is always the tree's)"),
]  # fmt: skip


def summary(r: IdleResults) -> str:
    parts = [
        f"{run.subject.key} {_n(run.commands)} commands/s, {_n(run.cpu_ms)} ms CPU/s"
        for run in r.runs
    ]
    return "idle: " + "; ".join(parts)
