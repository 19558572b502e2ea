"""A daphne subprocess serving the console, for end-to-end tests."""

from __future__ import annotations

import signal
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path

from workers.redis.embedded import free_port

ROOT = Path(__file__).resolve().parents[2]


class Console:
    """A daphne subprocess serving the console on a free loopback port."""

    def __init__(self, env: dict[str, str], log: Path) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log = log
        cmd = [sys.executable, "-m", "daphne", "-b", "127.0.0.1", "-p", str(self.port)]
        with open(log, "wb") as out:  # the child keeps its own fd
            self.proc = subprocess.Popen(
                [*cmd, "console.asgi:application"],
                cwd=ROOT,
                env=env,
                stdout=out,
                stderr=subprocess.STDOUT,
            )

    def ready(self) -> bool:
        if self.proc.poll() is not None:
            raise AssertionError(f"daphne exited {self.proc.returncode}:\n{self.output()}")
        try:
            with urllib.request.urlopen(f"{self.url}/login/", timeout=2) as response:
                return bool(response.status == 200)
        except (urllib.error.URLError, ConnectionError, TimeoutError):
            return False

    def output(self) -> str:
        return self.log.read_text(errors="replace")

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=10)
