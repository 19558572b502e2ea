"""Keeping child processes alive (``manage.py up``'s, ``runworker --processes N``'s): a dead
child is restarted after a back-off.

A child that dies (a crash, an OOM kill, a ``kill -9``) is started again after 1 s, then 2, 4...
up to 30 s while it keeps dying young; one that stayed up a minute starts over at 1 s. A stop
request (Ctrl-C, SIGTERM) stops them all. Two ways to end besides: children that are meant to
finish (``runworker --burst``) are done once they exit 0, and with ``give_up_after`` a child
that died young that many times in a row fails the whole supervisor (``failed`` names it), so
a worker that cannot start (a bad setting, a database that refuses it) ends in an error
instead of a restart loop.
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
    # Deaths in a row, each before STABLE_AFTER_S.
    young_deaths: int = 0
    # Exited 0 while exit 0 means "finished" (finish_on_success): not restarted.
    done: bool = False


Spawn = Callable[[Sequence[str]], "subprocess.Popen[bytes]"]


@dataclass
class Supervisor:
    children: list[Child]
    say: Callable[[str], None]
    spawn: Spawn = field(default=subprocess.Popen)
    clock: Callable[[], float] = time.monotonic
    finish_on_success: bool = False
    give_up_after: int | None = None
    failed: str | None = None  # why the supervisor gave up: a child kept dying

    @property
    def finished(self) -> bool:
        """Nothing more to supervise: every child is done, or one kept failing."""
        return self.failed is not None or all(c.done for c in self.children)

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
            elif not child.done and child.proc is not None and child.proc.poll() is not None:
                self._ended(child, child.proc, now)

    def _ended(self, child: Child, proc: subprocess.Popen[bytes], now: float) -> None:
        uptime_s = now - child.started_at
        if proc.returncode == 0 and self.finish_on_success:
            child.done = True
            return
        child.young_deaths = child.young_deaths + 1 if uptime_s < STABLE_AFTER_S else 0
        if self.give_up_after is not None and child.young_deaths >= self.give_up_after:
            self.failed = (
                f"{child.name} {describe_exit(proc.returncode)} {child.young_deaths} times in a "
                f"row, each within {STABLE_AFTER_S:g} s of starting: giving up"
            )
            self.say(self.failed)
            return
        child.backoff_s = next_backoff_s(child.backoff_s, uptime_s)
        child.restart_at = now + child.backoff_s
        self.say(
            f"{child.name} (pid {proc.pid}) {describe_exit(proc.returncode)} after "
            f"{uptime_s:.1f} s; restarting in {child.backoff_s:g} s"
        )

    def run(self, stopping: Callable[[], bool], poll_s: float = 0.2) -> None:
        """Until a stop is requested or nothing is left to supervise (``finished``)."""
        while not stopping() and not self.finished:
            self.check()
            if not self.finished:
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
