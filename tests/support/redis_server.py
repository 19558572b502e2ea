"""A private Redis 7.0 (Debian's ``redis-server``) for tests that must run on Redis too, not
only on the suite's Valkey: its own temp folder and free loopback port, no persistence."""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from pathlib import Path

from workers.redis.embedded import PrivateServer, free_port, wait_until_ready

REDIS_SERVER = Path("/usr/bin/redis-server")
START_TIMEOUT_S = 15.0


class PrivateRedis:
    """``redis-server`` on a free loopback port; ``stop`` kills it and removes its folder."""

    def __init__(self) -> None:
        self.port = free_port()
        self.url = f"redis://127.0.0.1:{self.port}/0"
        self.folder = Path(tempfile.mkdtemp(prefix="streamdesk-test-redis7-"))
        self._proc: subprocess.Popen[bytes] | None = None

    def start(self) -> PrivateRedis:
        args = [str(REDIS_SERVER), "--port", str(self.port), "--bind", "127.0.0.1"]
        args += ["--dir", str(self.folder), "--save", "", "--appendonly", "no"]
        self._proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        wait_until_ready(self.url, START_TIMEOUT_S, self._proc)
        return self

    def stop(self) -> None:
        if self._proc is not None and self._proc.poll() is None:
            self._proc.terminate()
            self._proc.wait(timeout=10)
        shutil.rmtree(self.folder, ignore_errors=True)


def private(kind: str) -> PrivateServer | PrivateRedis:
    """A started private server: ``valkey`` (the suite's kind) or ``redis7``."""
    if kind == "redis7":
        return PrivateRedis().start()
    return PrivateServer(Path(tempfile.mkdtemp(prefix="streamdesk-test-valkey-"))).start()
