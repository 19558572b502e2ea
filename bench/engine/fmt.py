"""How the engine benchmark's report and summary write a figure: a share, MiB, a target's
verdict, a ratio, CPU cores."""

from __future__ import annotations

from bench.engine.cpu import CpuUse

MIB = 1024


def share(value: float | None) -> str:
    return "unknown" if value is None else f"{value:.1%}"


def mib(kb: int) -> str:
    return f"{kb / MIB:.1f} MiB"


def verdict(ok: bool) -> str:
    return "met" if ok else "NOT met"


def times(value: float) -> str:
    return f"{value:.2f}x"


def cores(cpu: CpuUse, part: float | None) -> str:
    cores = cpu.cores(part)
    return "-" if cores is None else f"{cores:.2f}"
