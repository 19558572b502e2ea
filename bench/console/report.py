"""The "Console at 1,000,000 entries" block of docs/benchmarks.md, and keeping it there.

``make bench`` regenerates the engine sections of docs/benchmarks.md as a whole; the console
block sits between two markers, and every writer leaves the others' parts as they were
(bench/common/report.py).
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable
from dataclasses import dataclass

from bench.common.machine import Machine
from bench.common.report import CONSOLE, CONSOLE_SUITE, about, facts, yes
from bench.console import runs_report
from bench.console.load import Built
from bench.console.runs_bench import RunsTimings
from bench.console.ws import GRACE_S, SETTLE_S, FanOut

TARGET_MS = 50.0
LARGE, SMALL = "large", "small"

LABELS = {
    "collect": ("`workers.monitor.sample.collect`", "one sample"),
    "current_overview": ("`views.dashboard.current_overview`", "sample, rates' baseline, rows"),
    "entries_page": ("`browse.entries_page`", "50 entries"),
    "pending_page": ("`browse.pending_page`", "50 pending entries"),
    "dead_page": ("`browse.dead_page`", "50 dead letters"),
    "tick": ("`Sampler.tick`", "sample, history's newest points, fragments, charts"),
    "overview": ("overview page `/`", "1 stream, 1 group, 4 workers"),
    "stream": ("stream page, newest entries", "50 rows"),
    "stream deep": ("stream page, `before=` the middle", "50 rows"),
    "pending": ("pending entries, first page", "50 rows"),
    "pending deep": ("pending entries, `after=` the middle", "50 rows"),
    "pending filtered": ("pending entries, `min_deliveries=2` (no match)", "0 rows"),
    "dead": ("dead letters, newest", "50 rows"),
    "dead deep": ("dead letters, `before=` the middle", "50 rows"),
    "event dead": ("event page of a dead event", "timeline, Retry: reads 1,000 dead letters"),
    "workers": ("workers page", "4 workers"),
    "jobs": ("jobs page", "latest of 200 jobs"),
    "audit": ("audit page", "100 of 1,000 records"),
}
# The requirement: the sampler's tick and every page, at 1,000,000 entries, under TARGET_MS
# server side.
TARGETS = (
    "tick", "overview", "stream", "stream deep", "pending", "pending deep", "pending filtered",
    "dead", "dead deep", "event dead", "workers", "jobs", "audit",
)  # fmt: skip


@dataclass(frozen=True, slots=True)
class ConsoleResults:
    machine: Machine
    began: float
    ended: float
    command: str
    repeats: int
    warmup: int
    built: dict[str, Built]  # LARGE, SMALL
    ms: dict[str, dict[str, list[float]]]  # subject -> data set -> one time per round
    cpu: dict[str, dict[str, list[float]]]  # the same calls' CPU time (the timing thread's)
    gc: dict[str, dict[str, list[float]]]  # the time the garbage collector ran in each call
    gc_objects: int  # objects the collector tracks in the timing process, after the rounds
    full_gc_ms: float  # one gc.collect() there (median of 3)
    fan: FanOut  # the clients asked for
    alone: FanOut  # one client, on the same daphne just before: the baseline
    runs: tuple[RunsTimings, ...] = ()  # the Runs page, per database kind
    runs_skipped: str = ""  # why PostgreSQL's was not measured


def pct(values: list[float], q: float) -> float:
    """The q-quantile (0 < q <= 1), nearest rank."""
    ordered = sorted(values)
    return ordered[max(0, math.ceil(q * len(ordered)) - 1)]


def _stats(values: list[float]) -> tuple[float, float, float]:
    return statistics.median(values), pct(values, 0.95), max(values)


def met(r: ConsoleResults, subject: str) -> bool:
    return pct(r.ms[subject][LARGE], 0.95) < TARGET_MS


def fan_met(f: FanOut) -> bool:
    return f.clients_with_all == f.clients and f.missing_fragment == 0


def _targets(r: ConsoleResults) -> list[str]:
    at = f"{r.built[LARGE].shape.entries:,}"
    rows = [f"| target | measured at {at} entries | met |", "| --- | --- | --- |"]
    for subject in TARGETS:
        p50, p95, top = _stats(r.ms[subject][LARGE])
        rows.append(
            f"| {LABELS[subject][0]} under {TARGET_MS:g} ms | p95 {p95:.1f} ms "
            f"(p50 {p50:.1f}, max {top:.1f}) | {yes(met(r, subject))} |"
        )
    f = r.fan
    rows.append(
        f"| {f.clients} websocket clients on one daphne receive every tick | "
        f"{f.clients_with_all} of {f.clients} got all {f.ticks} ticks of {f.seconds:g} s | "
        f"{yes(fan_met(f))} |"
    )
    return rows + runs_report.target_rows(list(r.runs))


def _data(r: ConsoleResults) -> list[str]:
    rows = [
        "| data set | entries | pending (4 consumers) | dead letters | built in | "
        "of which XADD | read + ack | server memory used |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for b in r.built.values():
        s = b.shape
        rows.append(
            f"| {s.label} | {s.entries:,} | {s.pending:,} | {s.dead:,} | {b.seconds:.1f} s | "
            f"{b.xadd_s:.1f} s | {b.read_ack_s:.1f} s | {b.used_mib:.1f} MiB |"
        )
    return rows


def _timings(r: ConsoleResults) -> list[str]:
    b, s = short(r.built[LARGE].shape.entries), short(r.built[SMALL].shape.entries)
    rows = [
        f"| measured | shows | {b} p50 | {b} p95 | {b} max (its CPU) | {s} p50 | {s} p95 "
        f"| {s} max (its CPU) | p50 {b} / {s} | p95 {b} / {s} |",
        "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for subject, (label, shows) in LABELS.items():
        cells = []
        for name in (LARGE, SMALL):
            p50, p95, top = _stats(r.ms[subject][name])
            its_cpu = r.cpu[subject][name][r.ms[subject][name].index(top)]
            cells += [f"{p50:.2f}", f"{p95:.2f}", f"{top:.1f} ({its_cpu:.1f})"]
        big, small = _stats(r.ms[subject][LARGE]), _stats(r.ms[subject][SMALL])
        rows.append(
            f"| {label} | {shows} | {' | '.join(cells)} | "
            f"{big[0] / small[0]:.2f}x | {big[1] / small[1]:.2f}x |"
        )
    return rows


def _same_cost(r: ConsoleResults) -> str:
    ratios = {
        s: statistics.median(r.ms[s][LARGE]) / statistics.median(r.ms[s][SMALL]) for s in LABELS
    }
    bounded = {s: x for s, x in ratios.items() if s != "pending filtered"}
    low, high = min(bounded, key=bounded.__getitem__), max(bounded, key=bounded.__getitem__)
    big, small = r.built[LARGE].shape, r.built[SMALL].shape
    return (
        f"The p50 ratios run from {bounded[low]:.2f}x ({LABELS[low][0]}) to "
        f"{bounded[high]:.2f}x ({LABELS[high][0]}). The exception is the filtered pending page "
        f"({ratios['pending filtered']:.2f}x): finding no match, it reads 1,000 pending "
        f"entries of the {big.entries:,}-entry set but all {small.pending} of the "
        f"{small.entries}-entry set, so it does more work there: bounded by `MAX_SCAN`, "
        "not by the size of the stream."
    )


def _slow(r: ConsoleResults) -> str:
    calls = [
        (w, c, g)
        for subject in LABELS
        for w, c, g in zip(
            r.ms[subject][LARGE], r.cpu[subject][LARGE], r.gc[subject][LARGE], strict=True
        )
        if w >= TARGET_MS
    ]
    if not calls:
        return f"No call took {TARGET_MS:g} ms or more."
    in_gc = sum(1 for w, _, g in calls if g >= w / 2)
    waited = sum(1 for w, c, g in calls if g < w / 2 and c < w / 2)
    total = sum(len(r.ms[s][LARGE]) for s in LABELS)
    return (
        f"{len(calls)} of the {total:,} calls took {TARGET_MS:g} ms or more: in {in_gc}, the "
        "garbage collector ran for at least half of it (a full collection: the timing "
        f"process tracks {r.gc_objects:,} objects, and `gc.collect()` takes "
        f"{r.full_gc_ms:.0f} ms there); {waited} waited for most of it (CPU time under half "
        f"the wall time); {len(calls) - in_gc - waited} neither."
    )


def _cpu(r: ConsoleResults) -> list[str]:
    b = short(r.built[LARGE].shape.entries)
    rows = [
        f"| measured | {b} wall p50 | CPU p50 | CPU p95 | CPU max | calls with GC | "
        f"calls over {TARGET_MS:g} ms wall: wall / CPU / GC |",
        "| --- | ---: | ---: | ---: | ---: | ---: | --- |",
    ]
    for subject, (label, _) in LABELS.items():
        wall, cpu, in_gc = r.ms[subject][LARGE], r.cpu[subject][LARGE], r.gc[subject][LARGE]
        slow = [t for t in zip(wall, cpu, in_gc, strict=True) if t[0] >= TARGET_MS]
        shown = ", ".join(f"{w:.0f} / {c:.0f} / {g:.0f}" for w, c, g in slow) or "none"
        rows.append(
            f"| {label} | {statistics.median(wall):.2f} | {statistics.median(cpu):.2f} | "
            f"{pct(cpu, 0.95):.2f} | {max(cpu):.2f} | {sum(1 for g in in_gc if g > 0)} of "
            f"{len(in_gc)} | {shown} |"
        )
    return rows


def _fan(f: FanOut, one: FanOut) -> list[str]:
    def both(values: tuple[float, float], unit: str = " ms", ratio: bool = True) -> str:
        a, b = values
        tail = f" {b / a:.2f}x |" if ratio and a else " |"
        return f"{a:.1f}{unit} | {b:.1f}{unit} |{tail}"

    def count(get: Callable[[FanOut], object]) -> str:
        return f"{get(one)} | {get(f)} | |"

    return [
        f"| | 1 client (baseline) | {f.clients} clients | {f.clients} / 1 |",
        "| --- | ---: | ---: | ---: |",
        f"| ticks broadcast in the {f.seconds:g} s window (one a second: {f.seconds:g}) | "
        + count(lambda x: x.ticks),
        "| ticks per client, min / max | "
        + count(lambda x: f"{x.per_client_min} / {x.per_client_max}"),
        "| clients that got every tick | "
        + count(lambda x: f"{x.clients_with_all} of {x.clients}"),
        "| messages without the overview fragment | " + count(lambda x: x.missing_fragment),
        "| largest message | " + count(lambda x: f"{x.message_bytes:,} bytes"),
        "| time between ticks (`at_ms`), min / max | "
        + count(lambda x: f"{min(x.gaps_ms, default=0)} / {max(x.gaps_ms, default=0)} ms"),
        "| delivery spread per tick (last client - first), p50 | "
        + both((statistics.median(one.spread_ms), statistics.median(f.spread_ms)), ratio=False),
        "| delivery spread per tick, max | "
        + both((max(one.spread_ms), max(f.spread_ms)), ratio=False),
        "| sample taken to message received, p50 | "
        + both((statistics.median(one.delay_ms), statistics.median(f.delay_ms))),
        "| sample taken to message received, p95 | "
        + both((pct(one.delay_ms, 0.95), pct(f.delay_ms, 0.95))),
        "| sample taken to message received, max | " + both((max(one.delay_ms), max(f.delay_ms))),
        "| daphne CPU per tick (user + system) | " + both((one.cpu_ms_per_tick, f.cpu_ms_per_tick)),
    ]


def summary(r: ConsoleResults) -> str:
    big = r.built[LARGE].shape
    lines = [f"built {big.label} in {r.built[LARGE].seconds:.1f} s"]
    for subject in LABELS:
        (p50, p95, top), small = _stats(r.ms[subject][LARGE]), _stats(r.ms[subject][SMALL])
        lines.append(
            f"{subject}: p50 {p50:.1f} ms, p95 {p95:.1f} ms, max {top:.1f} ms at "
            f"{short(big.entries)}; p50 ratio {p50 / small[0]:.2f}x"
        )
    lines += [
        f"websocket: {r.fan.clients_with_all}/{r.fan.clients} clients got all {r.fan.ticks} "
        f"ticks (per client {r.fan.per_client_min}..{r.fan.per_client_max}); spread max "
        f"{max(r.fan.spread_ms):.1f} ms",
        *(row.strip("| ") for row in runs_report.target_rows(list(r.runs))),
    ]
    return "\n".join(lines)


def short(n: int) -> str:
    """1000000 -> 1M, 20000 -> 20k, 100 -> 100: column headings."""
    for size, suffix in ((1_000_000, "M"), (1_000, "k")):
        if n >= size and n % size == 0:
            return f"{n // size}{suffix}"
    return str(n)


def render(r: ConsoleResults) -> str:
    mc = r.machine
    shown = about(mc)
    settings = "`DEBUG=0` (as deployed), SQLite sessions, channels_redis pub/sub layer"
    run = [("command", f"`{r.command}`"), shown.machine, shown.server, shown.code]
    big, small = r.built[LARGE].shape, r.built[SMALL].shape
    return f"""{CONSOLE.begin}
## Console at {big.entries:,} entries

{CONSOLE_SUITE.generated(r.began, r.ended)}:
a separate run from the sections above, which `make bench` writes and which leaves this
one as it is. Every figure below comes from this one run.

{facts([*run, ("settings", settings), shown.load])}

### Targets

Met means the 95th percentile of {r.repeats} timings is under {TARGET_MS:g} ms
({runs_report.TARGET_MS:g} ms for the Runs page, issue 32's target).

{chr(10).join(_targets(r))}

### Data sets

Both live on the benchmark's private Valkey, in databases 0 and 1. The stream
`streamdesk:events`; the group `agents`, which read every entry (consumers `bench-host-1`
to `bench-host-4`, one XREADGROUP COUNT 10000 each in turn) and acked all but every
{big.entries // big.pending}th, so pending entries spread over the whole stream and all
consumers; dead letters in `streamdesk:events:dead` shaped as
`workers.redis.deadletter.DeadLetter`; the engine counters; four live worker heartbeats; a full
recorded history (300 + 360 + 1,440 points: 5 min, 1 h, 24 h). The {small.entries}-entry
set keeps every entry pending and has {small.dead} dead letters, so every page shows its
full 50 rows in both sets.

{chr(10).join(_data(r))}

### Server-side time, ms

{r.repeats} rounds after {r.warmup} of warm-up, in one process; each round times every row
once on each data set, alternating which goes first. The ratio columns are the cost at
{big.entries:,} entries over the cost at {small.entries}: 1.0x means size does not matter.

{chr(10).join(_timings(r))}

{_same_cost(r)}

The same calls at {big.entries:,} entries, in ms: wall time against the CPU time the timing
thread used (Python's `time.thread_time`: the Django and Redis-client work; not the Redis
server's, nor waiting for it) and the time Python's garbage collector ran inside the call
(`gc.callbacks`). A call much slower than its CPU time waited: for a CPU on this shared
machine, or for Redis.

{chr(10).join(_cpu(r))}

{_slow(r)}

### Websocket fan-out

One `daphne console.asgi:application` process (the same database, secret and Redis as
above), with its own sampler: it samples the {big.entries:,}-entry set once a second and
broadcasts over the channel layer. First one client alone (the baseline), then
{r.fan.clients} at once, {r.fan.seconds:g} s each. Counting starts {SETTLE_S:g} s after the
last client subscribed; a tick counts if its first delivery fell inside the window, and its
deliveries up to {GRACE_S:g} s later count too. "Sample taken" is the tick's `at_ms` (the
server's clock when the sample began); "received" is the client's clock, on the same host.

{chr(10).join(_fan(r.fan, r.alone))}

{runs_report.section(list(r.runs), r.repeats, r.runs_skipped)}
### How it is measured

* **Pages**: `django.test.Client.get` with a signed-in staff user, timed around the call:
  URL routing, every middleware, the session and user read from SQLite, the view's Redis
  reads and the template. No network and no browser: server side only.
* **`collect`** and **`Sampler.tick`** are called directly. The tick is the whole of what
  the sampler does each second: the sample, the recorded history's newest points, the
  overview rows, every fragment rendered and the charts' newest rows (not the channel-layer
  send: that is in the websocket part).
* **Recorded history**: nothing records while the calls are timed, so a page computes its
  charts' data on the first round and reuses it (console/live/charts.py keeps whole ranges until
  their points change). With a recorder running, the 5-minute range changes every second:
  about 1.7 ms of CPU for one stream's three charts over 300 points (measured apart); a
  console's first page after it starts reads and charts all 2,100 points, about 20 ms.
* **Garbage collector**: the timing process freezes its start-up objects (`gc.freeze()`
  after Django is set up), as `console/asgi.py` does when daphne starts, so a full
  collection costs what it costs in the console.
* **Pending, filtered**: nothing matches, so `browse.pending_page` reads its bounded
  maximum (`MAX_SCAN`, 1,000 pending entries; all {small.pending} in the small set).
* **Private server**: `workers.redis.embedded.PrivateServer` on a free loopback port, no
  persistence; the data sets are built by `bench/console/load.py` (XADD and
  XREADGROUP + XACK run in Lua scripts, 10,000 entries a call).

Reproduce: `{CONSOLE_SUITE.target}` (= `{CONSOLE_SUITE.invocation}`);
`{CONSOLE_SUITE.invocation} --quick` for a smoke run written to a temp file;
`--help` for `--repeats`, `--clients`, `--seconds`, `--runs`, `--ref`, `--keep`.
{CONSOLE.end}
"""
