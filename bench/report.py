"""docs/benchmarks.md and the printed summary, from one run's results."""

from __future__ import annotations

import os
import platform
import sqlite3
import subprocess
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from importlib.metadata import version

from bench.harness import ROOT, Bench, display, runworker_cmd
from bench.latency import Pickup
from bench.throughput import Memory, Rates

THROUGHPUT_TARGET = 0.40  # runworker / raw
P99_TARGET_MS = 5.0
MIB = 1024


@dataclass(frozen=True, slots=True)
class Params:
    events: int
    repeats: int
    rate: float
    seconds: float
    warmup_s: float
    memory_events: int
    command: str


@dataclass(frozen=True, slots=True)
class Machine:
    cpus: int
    cpu_model: str
    memory_gib: float
    kernel: str
    python: str
    valkey: str
    libraries: str
    commit: str
    load_before: str
    load_after: str = ""

    def finish(self) -> Machine:
        return replace(self, load_after=_load())


def _load() -> str:
    return " / ".join(f"{x:.2f}" for x in os.getloadavg())


def _proc_field(path: str, key: str) -> str:
    try:
        with open(path) as handle:
            for line in handle:
                if line.startswith(key):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return "unknown"


def _git_commit() -> str:
    def git(*args: str) -> str:
        out = subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True,
                             timeout=10, check=False)
        return out.stdout.strip()
    head = git("rev-parse", "--short", "HEAD") or "unknown"
    return f"{head} (working tree had uncommitted changes)" if git("status", "--porcelain") else head


def machine(bench: Bench) -> Machine:
    info = bench.redis.info("server")
    valkey = f"Valkey {info['valkey_version']}" if "valkey_version" in info else \
        f"Redis {info['redis_version']}"
    mem_kb = _proc_field("/proc/meminfo", "MemTotal").split()[0]
    libs = ", ".join(f"{name} {version(name)}" for name in ("Django", "redis", "hiredis",
                                                               "pydantic"))
    return Machine(
        cpus=os.cpu_count() or 0, cpu_model=_proc_field("/proc/cpuinfo", "model name"),
        memory_gib=int(mem_kb) / MIB / MIB if mem_kb.isdigit() else 0.0,
        kernel=platform.release(), python=platform.python_version(), valkey=valkey,
        libraries=f"{libs}, SQLite {sqlite3.sqlite_version}", commit=_git_commit(),
        load_before=_load(),
    )


@dataclass(frozen=True, slots=True)
class Results:
    machine: Machine
    params: Params
    began: float
    ended: float
    rates: dict[str, Rates]
    pickups: dict[str, Pickup]
    memory: Memory

    @property
    def throughput_ratio(self) -> float:
        return self.rates["runworker"].median / self.rates["raw"].median

    @property
    def throughput_met(self) -> bool:
        return self.throughput_ratio >= THROUGHPUT_TARGET

    @property
    def p99_met(self) -> bool:
        return self.pickups["runworker"].p99_ms < P99_TARGET_MS


def _yes(ok: bool) -> str:
    return "**yes**" if ok else "**no**"


def _mib(kb: int) -> str:
    return f"{kb / MIB:.1f} MiB"


def summary(r: Results) -> str:
    w, raw, naive = (r.rates[k].median for k in ("runworker", "raw", "naive"))
    lat, m = r.pickups["runworker"], r.memory
    return "\n".join([
        f"throughput: runworker {w:,.0f}/s, raw {raw:,.0f}/s, naive {naive:,.0f}/s; "
        f"runworker/raw {r.throughput_ratio:.0%} (target >= {THROUGHPUT_TARGET:.0%}: "
        f"{'met' if r.throughput_met else 'NOT met'})",
        f"latency: runworker p50 {lat.p50_ms:.2f} ms p99 {lat.p99_ms:.2f} ms (target p99 < "
        f"{P99_TARGET_MS:g} ms: {'met' if r.p99_met else 'NOT met'}); raw p99 "
        f"{r.pickups['raw'].p99_ms:.2f} ms; naive mean {r.pickups['naive'].mean_ms:.0f} ms",
        f"memory: start {_mib(m.start_kb)}, peak {_mib(m.peak_kb)}, end {_mib(m.end_kb)} "
        f"over {m.events:,} events ({'flat' if m.flat else 'GROWING'})",
    ])


def _throughput(r: Results) -> list[str]:
    raw, naive = r.rates["raw"].median, r.rates["naive"].median
    rows = [
        "| worker | events/s (median) | each run | vs raw | vs naive |",
        "| --- | ---: | --- | ---: | ---: |",
    ]
    labels = {"raw": "raw XREADGROUP + XACK loop (ceiling)", "runworker": "`runworker`",
              "naive": "naive 1 s polling worker"}
    for name in ("raw", "runworker", "naive"):
        rates = r.rates[name]
        each = ", ".join(f"{x:,.0f}" for x in rates.runs)
        rows.append(f"| {labels[name]} | {rates.median:,.0f} | {each} | "
                    f"{rates.median / raw:.0%} | {rates.median / naive:.1f}x |")
    return rows


def _latency(r: Results) -> list[str]:
    ours = r.pickups["runworker"]
    rows = [
        "| worker | published/s | events | p50 | p90 | p99 | max | mean | p50 vs runworker |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for name in ("raw", "runworker", "naive"):
        p = r.pickups[name]
        rows.append(
            f"| {name} | {p.pace.rate:,.0f} | {p.measured:,} | {p.p50_ms:.2f} ms | "
            f"{p.p90_ms:.2f} ms | {p.p99_ms:.2f} ms | {p.max_ms:.2f} ms | {p.mean_ms:.2f} ms | "
            f"{p.p50_ms / ours.p50_ms:.2f}x |")
    return rows


def _memory(r: Results) -> list[str]:
    m = r.memory
    rows = [
        f"Drained {m.events:,} events at {m.rate:,.0f} events/s, `VmRSS` sampled every second.",
        "",
        "| start (first batch read) | after 10% | peak | end | end - after 10% | flat |",
        "| ---: | ---: | ---: | ---: | ---: | --- |",
        f"| {_mib(m.start_kb)} | {_mib(m.warm_kb)} | {_mib(m.peak_kb)} | {_mib(m.end_kb)} | "
        f"{(m.end_kb - m.warm_kb) / MIB:+.1f} MiB | {_yes(m.flat)} |",
        "",
        "| seconds | events done | RSS |",
        "| ---: | ---: | ---: |",
    ]
    step = max(1, len(m.samples) // 12)
    shown = m.samples[::step] + ([m.samples[-1]] if (len(m.samples) - 1) % step else [])
    rows += [f"| {s.t:.1f} | {s.done:,} | {_mib(s.kb)} |" for s in shown]
    return rows


def render(r: Results) -> str:
    p, mc = r.params, r.machine
    lat = r.pickups
    when = datetime.fromtimestamp(r.began, UTC).strftime("%Y-%m-%d %H:%M UTC")
    naive_vs = lat["naive"].p50_ms / lat["runworker"].p50_ms
    text = f"""# Benchmarks

Generated by `make bench` (`bench/run.py`) on {when}, in {r.ended - r.began:.0f} s. Do not edit by
hand: rerun it. Every figure comes from this one run; ratios compare workers measured
side by side on the same machine, which is shared and noisy, so read ratios before
absolute numbers.

## Targets

| target | measured | met |
| --- | --- | --- |
| `runworker` throughput at least {THROUGHPUT_TARGET:.0%} of the raw loop | {r.throughput_ratio:.0%} ({r.rates["runworker"].median:,.0f} vs {r.rates["raw"].median:,.0f} events/s) | {_yes(r.throughput_met)} |
| `runworker` pickup p99 under {P99_TARGET_MS:g} ms at {p.rate:g} events/s | {lat["runworker"].p99_ms:.2f} ms | {_yes(r.p99_met)} |
| `runworker` memory flat over {r.memory.events:,} events | {(r.memory.end_kb - r.memory.warm_kb) / MIB:+.1f} MiB after the first 10% | {_yes(r.memory.flat)} |

## Machine

| | |
| --- | --- |
| CPUs (`nproc`) | {mc.cpus} ({mc.cpu_model}) |
| memory | {mc.memory_gib:.0f} GiB |
| kernel | {mc.kernel} |
| Python | {mc.python} |
| server | {mc.valkey} (private, loopback, no persistence) |
| libraries | {mc.libraries} |
| commit | {mc.commit} |
| load average (1/5/15 min) | before {mc.load_before}; after {mc.load_after} |

Command: `{p.command}` (what `make bench` runs). The worker under test:
`{display(runworker_cmd(burst=True))}` (without `--burst` for latency), with
`STREAMDESK_AGENT_MODULES=bench.agents`, `LOG_LEVEL=WARNING`, SQLite in WAL mode.

## 1. Throughput

{p.events:,} probe events preloaded into `streamdesk:events`, then drained by one
process; {p.repeats} run(s) per worker, interleaved (raw, runworker, naive, raw, ...).
`runworker` goes through everything: decode and validate, the Lua idempotency gate,
the `AgentRun` claim, the async probe handler, the batched commit, and the settle
pipeline with XACK. Each run has an empty server and a fresh database.

{chr(10).join(_throughput(r))}

## 2. Pickup latency

{p.rate:g} events/s published one at a time on a fixed schedule for {p.warmup_s + p.seconds:g} s;
the first {p.warmup_s:g} s are warm-up and left out. Latency is the handler's start
(`started_ns`, in the stored result) minus `sent_ns` (taken just before XADD). The raw
loop notes the time right after its `XREADGROUP BLOCK` returns; the naive worker when it
starts each job.

{chr(10).join(_latency(r))}

The naive poller's p50 is {naive_vs:,.0f}x `runworker`'s: with a 1 s sleep after an
empty poll, a job waits about half a second on average.

## 3. Worker memory

{chr(10).join(_memory(r))}

"Flat" means the RSS at the end is within max(5 MiB, 5%) of the RSS after the first
10% of events (allocator pools and caches are warm by then); a leak of 100 bytes per
event would add about 9 MiB.

{METHOD}
"""
    return text


METHOD = """## How it is measured

* **Private everything.** `bench/run.py` starts its own Valkey (`workers.embedded.PrivateServer`,
  127.0.0.1, a free port) and its own SQLite files in a temporary folder; the project's
  `.streamdesk/` is never touched. `manage.py migrate` runs once into a template database
  that each run copies.
* **Throughput clock.** The parent polls progress every 20 ms (XINFO GROUPS `entries-read`
  and `pending` for the two stream workers; the lowest pending id for the jobs table).
  The clock runs from the last poll at which nothing had been picked up to the first
  poll at which everything was finished, so interpreter and Django start-up, and the exit
  after the last event, count for no worker. Resolution: about 40 ms per run.
* **Baselines**, each its own process with the same Python (`bench/baselines.py`):
  * *raw*: a redis-py (hiredis) loop: `XREADGROUP COUNT 200`, then one `XACK` of the
    batch; nothing else. It is the ceiling one Python process can reach on this stream.
    For latency it uses `BLOCK 1000` and notes the time as soon as the read returns.
  * *naive*: the polling worker the article replaces. Jobs sit in a SQLite `jobs` table
    (WAL, `synchronous=NORMAL`, an index on `(status, id)`). Each poll selects a page of
    100 pending jobs, oldest first; each job is decoded, validated with the probe's
    pydantic schema, handled with the same `probe_result` as the agent, and marked done
    by its own `UPDATE`, committed at once (as `job.save()` in a loop does). An empty
    poll sleeps 1 s. For latency the benchmark INSERTs (and commits) each job on the
    same schedule as the XADDs.
* **Pacing.** One event per slot of `1/rate` s: the publisher sleeps until the slot, never
  sends ahead; a late slot is sent at once and counted as lateness (the table's
  "published/s" is the rate achieved).
* **Memory.** `VmRSS` of the `runworker` process from `/proc/<pid>/status`, every second.
* **Never hangs.** Every wait has a deadline, every subprocess is killed in `finally`.

## Reproduce

```
make bench                               # = .venv/bin/python bench/run.py (a few minutes)
.venv/bin/python bench/run.py --quick    # smoke run, report to a temp file
.venv/bin/python bench/run.py --help     # --events, --repeats, --rate, --seconds, --keep
```
"""
