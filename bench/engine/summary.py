"""The engine benchmark's printed summary: one line per figure and its target."""

from __future__ import annotations

from bench.common.databases import KIND_NAMES, POSTGRES, SQLITE
from bench.engine.fmt import cores, mib, times, verdict
from bench.engine.report import (
    FLOOR_TARGET,
    LIGHT_P99_TARGET_MS,
    POSTGRES_TARGET,
    PROCESSES_TARGET,
    RAW_P99_TARGET,
    THROUGHPUT_TARGET,
)
from bench.engine.results import NAIVE, RAW, Results, floor_key
from bench.engine.subjects import runworker_key


def summary(r: Results) -> str:
    raw, floor, naive, n = r.rate(RAW), r.rate(floor_key(SQLITE)), r.rate(NAIVE), r.params.processes
    lines = [
        f"throughput (SQLite): runworker {r.ours():,.0f}/s, raw {raw:,.0f}/s, floor "
        f"{floor:,.0f}/s, naive {naive:,.0f}/s; runworker/raw {r.throughput_ratio:.1%} (target "
        f">= {THROUGHPUT_TARGET:.0%}: {verdict(r.throughput_ratio >= THROUGHPUT_TARGET)}); "
        f"floor/raw {r.floor_ratio:.1%}; runworker/floor {r.floor_share():.1%} (target >= "
        f"{FLOOR_TARGET:.0%}: {verdict(r.floor_share() >= FLOOR_TARGET)})",
    ]
    if POSTGRES in r.kinds:
        lines.append(
            f"throughput (PostgreSQL): runworker {r.ours(POSTGRES):,.0f}/s, floor "
            f"{r.rate(floor_key(POSTGRES)):,.0f}/s; runworker/floor {r.floor_share(POSTGRES):.1%}; "
            f"runworker PostgreSQL/SQLite {times(r.postgres_ratio)} (target >= "
            f"{times(POSTGRES_TARGET)}: {verdict(r.postgres_ratio >= POSTGRES_TARGET)})"
        )
    else:
        lines.append(f"PostgreSQL not measured: {r.postgres_skipped}")
    lines.append(
        f"--processes {n} / 1 process: "
        + "; ".join(
            f"{KIND_NAMES[k]} {times(r.scaling(k))} (target >= {times(PROCESSES_TARGET)}: "
            f"{verdict(r.scaling(k) >= PROCESSES_TARGET)}; CPU {cpu_brief(r, k)})"
            for k in r.kinds
        )
    )
    for light, rate in ((False, r.params.rate), (True, r.params.light_rate)):
        pickups = r.light if light else r.pickups
        each = []
        for kind in r.kinds:
            p99 = r.p99(kind, light)
            if light:
                target = (
                    f"target < {LIGHT_P99_TARGET_MS:g} ms: {verdict(p99 < LIGHT_P99_TARGET_MS)}"
                )
            else:
                ratio = r.raw_p99_ratio(kind)
                target = f"{times(ratio)} raw's, target <= {times(RAW_P99_TARGET)}: "
                target += verdict(ratio <= RAW_P99_TARGET)
                floor_p99 = r.floor_p99(kind)
                if floor_p99 is not None:
                    target += f"; floor p99 {floor_p99:.2f} ms"
            each.append(f"{KIND_NAMES[kind]} p99 {p99:.2f} ms ({target})")
        lines.append(
            f"latency at {rate:g}/s: runworker " + "; ".join(each) + f"; raw p99 "
            f"{pickups[RAW].p99_ms:.2f} ms"
            + ("" if light else f"; naive mean {r.pickups[NAIVE].mean_ms:.0f} ms")
        )
    lines += [
        f"memory ({m.config}): start {mib(m.start_kb)}, peak {mib(m.peak_kb)}, end "
        f"{mib(m.end_kb)} over {m.events:,} events ({'flat' if m.flat else 'GROWING'})"
        for m in r.memory
    ]
    return "\n".join(lines)


def cpu_brief(r: Results, kind: str) -> str:
    """Cores busy in the N-process drain: the worker's and the rest's."""
    cpu = r.rates[runworker_key(kind, r.params.processes)].cpu
    if cpu is None:
        return "not measured"
    parts = {"worker": cpu.worker, "valkey": cpu.valkey, "postgres": cpu.postgres}
    parts |= {"others": cpu.others, "idle": cpu.idle(r.machine.cpus)}
    shown = ", ".join(f"{name} {cores(cpu, t)}" for name, t in parts.items() if t is not None)
    return f"cores of {r.machine.cpus}: {shown}"
