"""Keeping ``manage.py up``'s processes alive: a dead child is restarted after a back-off.

A child that dies (a crash, an OOM kill, a ``kill -9``) is started again after 1 s, then 2, 4...
up to 30 s while it keeps dying young; one that stayed up a minute starts over at 1 s. Only
a stop request (Ctrl-C, SIGTERM) stops them all.
"""

from __future__ import annotations

import signal
import subprocess
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

MIN_BACKOFF_S = 1.0
MAX_BACKOFF_S = 30.0
# A child that ran this long before dying is restarted after MIN_BACKOFF_S again.
STABLE_AFTER_S = 60.0


def next_backoff_s(previous_s: float, uptime_s: float) -> float:
    """The wait before restarting a child that died after ``uptime_s``."""
    if previous_s <= 0 or uptime_s >= STABLE_AFTER_S:
        return MIN_BACKOFF_S
    return min(previous_s * 2, MAX_BACKOFF_S)


def describe_exit(code: int) -> str:
    if code < 0:
        try:
            return f"killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"killed by signal {-code}"
    return f"exited with code {code}"


@dataclass
class Child:
    name: str
    argv: Sequence[str]
    proc: subprocess.Popen[bytes] | None = None
    started_at: float = 0.0
    backoff_s: float = 0.0
    restart_at: float | None = None
    restarts: int = 0


Spawn = Callable[[Sequence[str]], "subprocess.Popen[bytes]"]


@dataclass
class Supervisor:
    children: list[Child]
    say: Callable[[str], None]
    spawn: Spawn = field(default=subprocess.Popen)
    clock: Callable[[], float] = time.monotonic

    def start_all(self) -> None:
        for child in self.children:
            self._start(child)

    def _start(self, child: Child) -> subprocess.Popen[bytes]:
        child.proc = self.spawn(child.argv)
        child.started_at = self.clock()
        child.restart_at = None
        return child.proc

    def check(self) -> None:
        """Notice children that died, and restart those whose back-off is over."""
        now = self.clock()
        for child in self.children:
            if child.restart_at is not None:
                if now >= child.restart_at:
                    proc = self._start(child)
                    child.restarts += 1
                    self.say(f"{child.name} restarted: pid {proc.pid} (restart {child.restarts})")
            elif child.proc is not None and child.proc.poll() is not None:
                self._schedule_restart(child, child.proc, now)

    def _schedule_restart(self, child: Child, proc: subprocess.Popen[bytes], now: float) -> None:
        uptime_s = now - child.started_at
        child.backoff_s = next_backoff_s(child.backoff_s, uptime_s)
        child.restart_at = now + child.backoff_s
        self.say(
            f"{child.name} (pid {proc.pid}) {describe_exit(proc.returncode)} after "
            f"{uptime_s:.1f} s; restarting in {child.backoff_s:g} s"
        )

    def run(self, stopping: Callable[[], bool], poll_s: float = 0.2) -> None:
        while not stopping():
            self.check()
            time.sleep(poll_s)

    def stop_all(self, timeout_s: float) -> None:
        """SIGTERM to every live child, then SIGKILL to any still running at the deadline."""
        live = [(c.name, c.proc) for c in self.children if c.proc and c.proc.poll() is None]
        for _, proc in live:
            proc.send_signal(signal.SIGTERM)
        deadline = self.clock() + timeout_s
        for name, proc in live:
            try:
                proc.wait(timeout=max(deadline - self.clock(), 0.1))
            except subprocess.TimeoutExpired:
                self.say(f"{name} did not stop in time; killing it")
                proc.kill()
                proc.wait()
