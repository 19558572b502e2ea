"""What the benchmark ran on: hardware, software versions, commit, load."""

from __future__ import annotations

import os
import platform
import sqlite3
from dataclasses import dataclass, replace
from importlib.metadata import version
from typing import Any, cast

from bench.harness import Bench

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
    )
