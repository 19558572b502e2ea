"""What the benchmark ran on: hardware, software versions, commit, load."""

from __future__ import annotations

import os
import platform
import sqlite3
from dataclasses import dataclass, replace
from importlib.metadata import version
from typing import Any, cast

from bench.common.harness import Bench

MIB = 1024


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
    cpu_ticks_before: tuple[int, ...] = ()
    steal: float | None = None  # of the CPU time the run wanted, the share another guest got

    def finish(self) -> Machine:
        return replace(self, load_after=_load(), steal=_steal(self.cpu_ticks_before, _ticks()))


def _load() -> str:
    return " / ".join(f"{x:.2f}" for x in os.getloadavg())


def _ticks() -> tuple[int, ...]:
    """The first line of /proc/stat: user nice system idle iowait irq softirq steal."""
    try:
        with open("/proc/stat") as handle:
            return tuple(int(x) for x in handle.readline().split()[1:9])
    except (OSError, ValueError):
        return ()


def _steal(before: tuple[int, ...], after: tuple[int, ...]) -> float | None:
    """On a virtual machine, time its CPUs were runnable but running another guest: a
    latency spike of several ms each time it lands on a worker between two events."""
    if len(before) != 8 or len(after) != 8:
        return None
    spent = [b - a for a, b in zip(before, after, strict=True)]
    wanted = sum(spent) - spent[3] - spent[4]  # all but idle and iowait
    return spent[7] / wanted if wanted > 0 else None


def _proc_field(path: str, key: str) -> str:
    try:
        with open(path) as handle:
            for line in handle:
                if line.startswith(key):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return "unknown"


def machine(bench: Bench) -> Machine:
    info = cast(dict[str, Any], bench.redis.info("server"))
    valkey = (
        f"Valkey {info['valkey_version']}"
        if "valkey_version" in info
        else f"Redis {info['redis_version']}"
    )
    mem_kb = _proc_field("/proc/meminfo", "MemTotal").split()[0]
    libs = ", ".join(
        f"{name} {version(name)}" for name in ("Django", "redis", "hiredis", "pydantic")
    )
    return Machine(
        cpus=os.cpu_count() or 0,
        cpu_model=_proc_field("/proc/cpuinfo", "model name"),
        memory_gib=int(mem_kb) / MIB / MIB if mem_kb.isdigit() else 0.0,
        kernel=platform.release(),
        python=platform.python_version(),
        valkey=valkey,
        libraries=f"{libs}, SQLite {sqlite3.sqlite_version}",
        commit=bench.source,
        load_before=_load(),
        cpu_ticks_before=_ticks(),
    )
