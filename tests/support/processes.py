"""Real ``manage.py runworker`` processes, driven with real signals (the ``workers`` fixture)."""

from __future__ import annotations

import contextlib
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def manage(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    """``manage.py args`` in a subprocess with ``env``; its output captured, never raising."""
    return subprocess.run(
        [sys.executable, "manage.py", *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def start(env: dict[str, str], log: Path, *args: str) -> subprocess.Popen[bytes]:
    """``manage.py args`` started with ``env``, its output to the file ``log``."""
    with open(log, "wb") as out:  # the child keeps its own fd
        return subprocess.Popen(
            [sys.executable, "manage.py", *args],
            cwd=ROOT,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
        )


TIMINGS = ["--claim-idle-ms", "1500", "--lease-ms", "1000", "--concurrency", "8"]


class Workers:
    def __init__(self, env: dict[str, str], log_dir: Path) -> None:
        self.env = env
        self.log_dir = log_dir
        self.procs: list[subprocess.Popen[bytes]] = []

    def start(self, name: str, *args: str) -> subprocess.Popen[bytes]:
        log = self.log_dir / f"{name}.log"
        proc = start(self.env, log, "runworker", "--consumer", name, *TIMINGS, *args)
        self.procs.append(proc)
        return proc

    def log(self, name: str) -> str:
        return (self.log_dir / f"{name}.log").read_text(errors="replace")

    def exit_code(self, proc: subprocess.Popen[bytes], name: str, timeout_s: float) -> int:
        """``proc``'s exit code. One still running at the deadline is sent SIGABRT, so its
        log ends with every thread's stack (PYTHONFAULTHANDLER), and the test fails with it."""
        try:
            return proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            proc.send_signal(signal.SIGABRT)
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=5)
            pytest.fail(f"{name} still running after {timeout_s} s:\n{self.log(name)}")

    def stop_all(self) -> None:
        for proc in self.procs:
            if proc.poll() is None:
                proc.kill()
                proc.wait(timeout=10)


@pytest.fixture
def workers(worker_env: dict[str, str], tmp_path: Path) -> Iterator[Workers]:
    pool = Workers(worker_env, tmp_path)
    yield pool
    pool.stop_all()
