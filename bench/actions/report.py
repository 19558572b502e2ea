"""The "Bulk actions" block of docs/benchmarks.md (``make bench-actions``), between its markers.

``make bench`` and ``make bench-console`` keep this block as it is; this writer keeps theirs
(bench/common/report.py). Works on the JSON result of bench/actions/measure.py.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass
from typing import Any

from bench.common.machine import Machine
from bench.common.report import ACTIONS, ACTIONS_SUITE, about, facts, reflow

REDRIVE, CLAIM_ALL, DEFAULT, OFF = "redrive", "claim-all", "default", "off"
BASELINE = "baseline"
MACHINE = "machine"
WORKER, JOB, SERVER = "runworker", "job (this process)", "valkey"
PARTS = ("read", "act", "save", "pace", "other")


@dataclass(frozen=True, slots=True)
class ActionResults:
    machine: Machine
    began: float
    ended: float
    command: str
    entries: int
    result: dict[str, Any]  # bench/actions/measure.py's output

    @property
    def default_rate(self) -> float:
        return float(self.result["default_rate"])

    def runs(self, action: str, rate: str) -> list[dict[str, Any]]:
        return [r for r in self.result["runs"] if r["action"] == action and r["rate"] == rate]

    @property
    def windows(self) -> list[dict[str, Any]]:
        return list(self.result["effect"]["windows"])


def label(action: str) -> str:
    return {REDRIVE: "redrive", CLAIM_ALL: "claim all"}[action]


def rate_label(r: ActionResults, rate: str) -> str:
    return f"default ({r.default_rate:,.0f}/s)" if rate == DEFAULT else "off"


def per_s(run: dict[str, Any]) -> float:
    return float(run["done"]) / float(run["seconds"])


def median_run(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """The run with the median rate (the lower middle one of an even count)."""
    ordered = sorted(runs, key=per_s)
    return ordered[(len(ordered) - 1) // 2]


def around(r: ActionResults, i: int) -> list[dict[str, Any]]:
    """The baseline windows on either side of window ``i``."""
    ws = r.windows
    return [ws[j] for j in (i - 1, i + 1) if 0 <= j < len(ws) and ws[j]["action"] == BASELINE]


def ratios(r: ActionResults) -> list[float | None]:
    """Per window: a job window's throughput over the mean of the baselines around it."""
    return [
        None
        if w["action"] == BASELINE
        else w["rate_per_s"] / statistics.mean(b["rate_per_s"] for b in around(r, i))
        for i, w in enumerate(r.windows)
    ]


def effect_of(r: ActionResults, action: str, rate: str) -> tuple[float, float, list[float]]:
    """(mean ratio, job entries/s in its windows, each window's ratio) of one kind of job."""
    rs = ratios(r)
    picked = [
        (w, x)
        for w, x in zip(r.windows, rs, strict=True)
        if w["action"] == action and w["rate"] == rate and x is not None
    ]
    each = [x for _, x in picked]
    entries = sum(w["job"]["in_window"] for w, _ in picked)
    seconds = sum(w["seconds"] for w, _ in picked)
    return statistics.mean(each), entries / seconds, each


def _summary_table(r: ActionResults) -> list[str]:
    rows = [
        "| action | rate limit | entries/s alone | entries/s beside the worker | "
        "worker throughput during / baseline |",
        "| --- | --- | ---: | ---: | ---: |",
    ]
    for action in (REDRIVE, CLAIM_ALL):
        for rate in (DEFAULT, OFF):
            runs = r.runs(action, rate)
            alone = per_s(median_run(runs))
            shown = f"{alone:,.0f}" + (f" (median of {len(runs)})" if len(runs) > 1 else "")
            ratio, beside, each = effect_of(r, action, rate)
            windows = ", ".join(f"{x:.2f}x" for x in each)
            rows.append(
                f"| {label(action)} {r.entries:,} | {rate_label(r, rate)} | {shown} | "
                f"{beside:,.0f} | **{ratio:.2f}x**"
                + (f" ({windows})" if len(each) > 1 else "")
                + " |"
            )
    return rows


def _alone_table(r: ActionResults) -> list[str]:
    rows = [
        "| action | rate limit | seconds | entries/s | batches | read | act | save | pace | "
        "other | busy ms per batch |",
        "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for run in r.result["runs"]:
        parts = run["parts"]
        busy = sum(parts[p] for p in PARTS if p != "pace") / max(run["batches"], 1) * 1000
        cells = " | ".join(f"{parts[p]:.2f} s" for p in PARTS)
        rows.append(
            f"| {label(run['action'])} | {rate_label(r, run['rate'])} | {run['seconds']:.2f} | "
            f"{per_s(run):,.0f} | {run['batches']} | {cells} | {busy:.1f} |"
        )
    return rows


def _beside_table(r: ActionResults) -> list[str]:
    """The jobs of the worker windows, whole runs (to the batch after the window's end)."""
    rows = [
        "| job | entries | seconds | entries/s | read | act | save | pace | other | "
        "busy ms per batch |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for w in r.windows:
        if not w["job"]:
            continue
        job, parts = w["job"], w["job"]["parts"]
        busy = sum(parts[p] for p in PARTS if p != "pace") / max(job["batches"], 1) * 1000
        cells = " | ".join(f"{parts[p]:.2f} s" for p in PARTS)
        rows.append(
            f"| {label(job['action'])}, {rate_label(r, job['rate'])} | {job['done']:,} | "
            f"{job['seconds']:.2f} | {per_s(job):,.0f} | {cells} | {busy:.1f} |"
        )
    return rows


def _saturated(r: ActionResults) -> str:
    low = min(min(w["lag_start"], w["lag_end"]) for w in r.windows)
    if low > 0:
        return f"The backlog never ran out: it was at least {low:,} at every window's edge."
    return (
        "**The backlog ran out at a window's edge**: the worker was idle at times, so its "
        "throughput understates its capacity (raise `--produce-rate`)."
    )


def _spread(r: ActionResults) -> str:
    base = [w["rate_per_s"] for w in r.windows if w["action"] == BASELINE]
    mean = statistics.mean(base)
    return (
        f"The {len(base)} baselines ranged from {min(base):,.0f} to {max(base):,.0f} events/s, "
        f"{min(base) / mean:.2f}x to {max(base) / mean:.2f}x of their mean ({mean:,.0f}): "
        "a ratio inside that band is within this machine's noise."
    )


def _cpu(w: dict[str, Any], name: str) -> float:
    return float(w["cpu"][name]) / float(w["seconds"])


def _others(w: dict[str, Any]) -> float:
    """Every other process's CPU (clock-tick rounding can make an idle machine's negative)."""
    ours = sum(v for k, v in w["cpu"].items() if k != MACHINE)
    return max(0.0, (float(w["cpu"][MACHINE]) - ours) / float(w["seconds"]))


def _efficiency(w: dict[str, Any]) -> float:
    """Events the worker finished per second of CPU it got."""
    return float(w["processed"]) / float(w["cpu"][WORKER]) if w["cpu"][WORKER] else 0.0


def _windows_table(r: ActionResults) -> list[str]:
    rows = [
        "| window | s | worker events/s | each second, min-max | during / baseline | "
        "job entries (per s) | CPU: worker | job | valkey | other processes | "
        "worker events per CPU-s | backlog start -> end |",
        "| --- | ---: | ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |",
    ]
    for w, ratio in zip(r.windows, ratios(r), strict=True):
        name = BASELINE if w["action"] == BASELINE else f"{label(w['action'])}, {w['rate']}"
        spread = (
            f"{min(w['per_second']):,.0f}-{max(w['per_second']):,.0f}" if w["per_second"] else ""
        )
        job = (
            f"{w['job']['in_window']:,} ({w['job']['in_window'] / w['seconds']:,.0f})"
            if w["job"]
            else ""
        )
        rows.append(
            f"| {name} | {w['seconds']:.1f} | {w['rate_per_s']:,.0f} | {spread} | "
            f"{f'{ratio:.2f}x' if ratio is not None else ''} | {job} | {_cpu(w, WORKER):.2f} | "
            f"{_cpu(w, JOB):.2f} | {_cpu(w, SERVER):.2f} | {_others(w):.2f} | "
            f"{_efficiency(w):,.0f} | {w['lag_start']:,} -> {w['lag_end']:,} |"
        )
    return rows


def _cost_table(r: ActionResults) -> list[str]:
    """Per kind of job, what its windows changed against the baselines around them."""
    rows = [
        "| job | rate limit | CPU of the job process | Valkey CPU, minus baseline | "
        "worker CPU, minus baseline | other processes, minus baseline | "
        "worker events per CPU-s, during / baseline |",
        "| --- | --- | ---: | ---: | ---: | ---: | ---: |",
    ]

    def delta(i: int, get: Any) -> float:
        return float(get(r.windows[i]) - statistics.mean(get(b) for b in around(r, i)))

    for action in (REDRIVE, CLAIM_ALL):
        for rate in (DEFAULT, OFF):
            picked = [
                i for i, w in enumerate(r.windows) if w["action"] == action and w["rate"] == rate
            ]
            if not picked:
                continue
            job = statistics.mean(_cpu(r.windows[i], JOB) for i in picked)
            server, worker, others, efficiency = (
                statistics.mean(delta(i, get) for i in picked)
                for get in (
                    lambda w: _cpu(w, SERVER),
                    lambda w: _cpu(w, WORKER),
                    _others,
                    _efficiency,
                )
            )
            base = statistics.mean(_efficiency(b) for i in picked for b in around(r, i))
            signed = [f"{round(x, 2) + 0.0:+.2f}" for x in (server, worker, others)]  # no -0.00
            rows.append(
                f"| {label(action)} | {rate_label(r, rate)} | {job:.2f} | {' | '.join(signed)} | "
                f"{(base + efficiency) / base:.2f}x |"
            )
    return rows


def summary(r: ActionResults) -> str:
    lines = []
    for action in (REDRIVE, CLAIM_ALL):
        for rate in (DEFAULT, OFF):
            ratio, beside, _ = effect_of(r, action, rate)
            alone = per_s(median_run(r.runs(action, rate)))
            lines.append(
                f"{label(action)}, rate {rate}: {alone:,.0f} entries/s alone, {beside:,.0f} "
                f"beside the worker; worker throughput {ratio:.2f}x of baseline"
            )
    base = [w["rate_per_s"] for w in r.windows if w["action"] == BASELINE]
    lines.append(f"worker baselines: {', '.join(f'{x:,.0f}' for x in base)} events/s")
    lines.append(f"in {r.ended - r.began:.0f} s")
    return "\n".join(lines)


def render(r: ActionResults) -> str:
    mc, effect = r.machine, r.result["effect"]
    shown = about(mc)
    settings = "`DEBUG=0` (as deployed); one SQLite file (WAL) shared by the job and the worker"
    run = [("command", f"`{r.command}`"), shown.machine, shown.server, shown.code]
    worker_cmd = " ".join(
        ".venv/bin/python" if i == 0 else part for i, part in enumerate(effect["worker_cmd"])
    )
    return reflow(f"""{ACTIONS.begin}
## Bulk actions at {r.entries:,} entries

{ACTIONS_SUITE.generated(r.began, r.ended)}:
a separate run from the sections above, which leave this one as it is. Every figure below
comes from this one run. The machine is shared and noisy: read the ratios (each against the
baselines measured just before and just after it) before the absolute numbers.

{facts([*run, ("settings", settings), shown.load])}

{chr(10).join(_summary_table(r))}

The **redrive** takes every dead letter of `streamdesk:events:dead` (`DeadFilter()`, no
condition) back to `streamdesk:events`; **claim all** moves every pending entry of consumer
`gone` in group `agents` to consumer `rescuer`. Both go the way an operator's click goes:
`operations.redrive(...)` / `operations.claim_all(...)` queue a `BulkJob` (and its audit
record), then `jobs.run(...)` works it through in batches of 500 until done. "Off" is the
same job with `rate_per_s` set to 10^9 after it was queued.

### Each action alone

No worker running. Each run starts from a freshly built data set ({r.entries:,} dead
letters, or {r.entries:,} entries read by `gone` and never acked) and is checked afterwards:
the job `done`, every entry acted on once, none skipped, none left. Seconds are wall clock
from the operation's call to `jobs.run` returning. Where they go, per step of a batch in
`workers/operations/jobs.py`: **read** the page (`scan_dead`: XRANGE of 500 letters and the filter;
`pending_ids`: XPENDING of 500), **act** (the redrive's Lua call per 500 letters: XRANGE,
XADD, XDEL each; the claim's `XCLAIM ... JUSTID` of 500), **save** cursor and counts (one
UPDATE), **pace** (the rate limit's sleep), **other** (the cancel check before each batch,
taking and ending the job, the audit record).

{chr(10).join(_alone_table(r))}

### Worker throughput while a job runs

The worker, with the `demo.echo` agent (built in), on `streamdesk:events`, group `agents`:

    {worker_cmd}

A producer keeps it busy: it XADDs `demo.echo` events at {effect["produce_rate"]:,.0f}/s,
more than one worker does here, on top of {effect["backlog"]:,} queued before the worker
started. So the worker always has a backlog (the group's lag), its throughput is its
capacity, and whatever takes capacity away shows. {_saturated(r)}

Throughput is the engine's `processed` counter (`streamdesk:stats:streamdesk:events`), read
at the edges of each window ({r.windows[0]["seconds"]:.0f} s, after {effect["warmup_s"]:g} s
of warm-up) and every second between.
Windows alternate: a baseline, then a job at the default rate (twice for each action), then
each job with the limit off on the entries left, each between two baselines; "during /
baseline" is the window's throughput over the mean of those two. A job window ends after
the same time, or when its job ends (the jobs with the limit off); a job still running then
is stopped (it is queued again) and the next job of its action is a new one.

This part starts from its own data set, {effect["entries"]:,} dead letters and as many
pending entries of `gone` (twice the above, so that the jobs with the limit off still have
seconds of work left after the default-rate windows). Both jobs act where the worker
works: redriven events join the stream the worker reads (at the back of its backlog here,
so it processes none of them in the window), and the claim moves pending entries of the
worker's own group. The worker runs with `--claim-idle-ms 3600000`, so it never takes
`gone`'s entries itself.

CPU columns are CPU-seconds per second of the window (1.00 = one whole CPU), from `/proc`:
the worker, this benchmark's process (which runs the job; idle in baselines), the Valkey
server, and every other process of the machine (`/proc/stat` busy time minus ours: other
work on this shared machine).

{chr(10).join(_windows_table(r))}

{_spread(r)}

What the jobs changed, in CPU-seconds per second, against the mean of the baselines around
each of their windows (averaged over the windows of each kind). "Worker events per CPU-s" is
the work the worker got done per second of CPU it got: where it stays level, the job made no
event dearer (no waiting on Redis or SQLite), it only took CPU away.

{chr(10).join(_cost_table(r))}

The same jobs, beside the worker (each until it stopped or ended: the last batch may fall
after its window), with the steps of their batches as above. Their **save** also waits for
SQLite's write lock, which the worker takes for its own commits.

{chr(10).join(_beside_table(r))}

Reproduce:

{REPRODUCE}

{ACTIONS.end}
""")


REPRODUCE = ACTIONS_SUITE.rerun(
    " (about 4 minutes)",
    [
        ("--quick", "smoke run (about a minute), report to a temp file"),
        ("--ref HEAD", "a commit instead of the working tree"),
        ("--help", "--entries, --repeats, --seconds, --produce-rate,\n--output, --keep"),
    ],
)
