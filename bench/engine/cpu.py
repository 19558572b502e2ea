"""CPU time each part of a drain used: the worker's processes, Valkey, PostgreSQL, the bench.

Two cores serve everything in a run: the worker (with ``--processes 2``, a supervisor and
two children), the Valkey server, PostgreSQL's backends, and the parent polling progress.
A ``CpuMeter`` takes utime + stime from ``/proc/<pid>/stat`` of each of them when a drain
starts and when it ends, and the machine's busy time from ``/proc/stat``, so a figure
shows where the cores went: to the parts, to other processes, or nowhere (idle).
"""

from __future__ import annotations

import os
import resource
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

TICK_S = 1.0 / os.sysconf("SC_CLK_TCK")  # /proc counts CPU time in clock ticks (10 ms)
BACKENDS_EVERY_S = 0.1  # pg_stat_activity is asked at most this often while waiting


def cpu_s(pid: int) -> float | None:
    """utime + stime of one process (all its threads), None once it is gone."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    # The fields after the command (in parentheses, which may hold spaces): state is the
    # 3rd field of the line, utime the 14th and stime the 15th.
    fields = text[text.rindex(")") + 2 :].split()
    return (int(fields[11]) + int(fields[12])) * TICK_S


def tree(pid: int) -> list[int]:
    """``pid`` and every process under it (each thread's ``children`` file)."""
    found, todo = [], [pid]
    while todo:
        current = todo.pop()
        found.append(current)
        try:
            tasks = list(Path(f"/proc/{current}/task").iterdir())
        except OSError:
            continue
        for task in tasks:
            try:
                todo += [int(child) for child in (task / "children").read_text().split()]
            except (OSError, ValueError):
                continue
    return found


def busy_s() -> float | None:
    """All CPUs' time not idle (nor waiting on I/O) since boot: user, nice, system, irq,
    softirq, and steal (time the hypervisor gave another guest)."""
    try:
        with open("/proc/stat") as handle:
            ticks = [int(x) for x in handle.readline().split()[1:9]]
    except (OSError, ValueError):
        return None
    return (sum(ticks) - ticks[3] - ticks[4]) * TICK_S if len(ticks) == 8 else None


def _own_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


@dataclass(frozen=True, slots=True)
class CpuUse:
    """CPU seconds each part used over ``seconds`` of drain (``postgres``: its backends for
    the run's database; None when the run used none), and all CPUs' busy time (``machine``)."""

    seconds: float
    worker: float
    valkey: float
    postgres: float | None
    parent: float
    machine: float | None = None

    @property
    def total(self) -> float:
        """The parts' CPU seconds together."""
        return self.worker + self.valkey + (self.postgres or 0.0) + self.parent

    @property
    def others(self) -> float | None:
        """What the rest of the machine used meanwhile (another job on a shared machine)."""
        return None if self.machine is None else max(0.0, self.machine - self.total)

    def idle(self, cpus: int) -> float | None:
        """CPU seconds nobody used."""
        return None if self.machine is None else max(0.0, cpus * self.seconds - self.machine)

    def cores(self, part: float | None) -> float | None:
        """``part``'s CPU seconds as cores kept busy on average (1.0: one whole core)."""
        return None if part is None or self.seconds <= 0 else part / self.seconds


@dataclass(frozen=True, slots=True)
class _Sample:
    at: float
    worker: dict[int, float]  # pid -> CPU seconds so far
    valkey: float
    backends: dict[int, float]
    parent: float
    machine: float | None


class CpuMeter:
    """``start()`` at every poll before the drain begins (the last call counts), ``stop()``
    once it is done. Processes that start between the two count from zero; one that ends
    before ``stop()`` is lost (a worker's processes and backends live until it exits)."""

    def __init__(
        self, worker_pid: int, valkey_pid: int, backends: Callable[[], list[int]] | None
    ) -> None:
        self.worker_pid = worker_pid
        self.valkey_pid = valkey_pid
        self.backends = backends
        self._backend_pids: list[int] = []
        self._listed = 0.0
        self._start: _Sample | None = None

    def _backends(self, refresh: bool) -> dict[int, float]:
        if self.backends is None:
            return {}
        now = time.monotonic()
        if refresh or now - self._listed >= BACKENDS_EVERY_S:
            self._backend_pids, self._listed = self.backends(), now
        return _times(self._backend_pids)

    def _sample(self, refresh: bool) -> _Sample:
        return _Sample(
            time.monotonic(),
            _times(tree(self.worker_pid)),
            cpu_s(self.valkey_pid) or 0.0,
            self._backends(refresh),
            _own_s(),
            busy_s(),
        )

    def start(self) -> None:
        self._start = self._sample(refresh=False)

    def stop(self) -> CpuUse:
        end = self._sample(refresh=True)
        begin = self._start or end
        return CpuUse(
            seconds=end.at - begin.at,
            worker=_spent(begin.worker, end.worker),
            valkey=end.valkey - begin.valkey,
            postgres=_spent(begin.backends, end.backends) if self.backends else None,
            parent=end.parent - begin.parent,
            machine=None
            if end.machine is None or begin.machine is None
            else end.machine - begin.machine,
        )


def _times(pids: list[int]) -> dict[int, float]:
    times = {pid: cpu_s(pid) for pid in pids}
    return {pid: t for pid, t in times.items() if t is not None}


def _spent(begin: dict[int, float], end: dict[int, float]) -> float:
    return sum(t - begin.get(pid, 0.0) for pid, t in end.items())
