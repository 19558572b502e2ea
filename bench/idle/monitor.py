"""Every command the server runs during a window, from ``MONITOR`` on a connection of its
own: which connection sent it, or whether a script ran it (``INFO commandstats`` counts both,
and cannot tell a ``GET`` a worker sends from one a script runs), its name and its key.

MONITOR costs the server some CPU per command, not the workers: the worker's CPU and the
command counts (from ``INFO commandstats``) are what the suite reports; these lines only say
what each command was for (bench/idle/purposes.py).
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from types import TracebackType
from typing import Any

import redis

SCRIPT = "script"  # a Seen's origin when a script (EVAL, EVALSHA, FCALL) ran the command
SCRIPT_CALLS = frozenset({"eval", "evalsha", "eval_ro", "evalsha_ro", "fcall", "fcall_ro"})
# Commands that commandstats names with their subcommand: ``xinfo|stream``.
CONTAINERS = frozenset(
    {"xinfo", "xgroup", "script", "config", "client", "object", "memory", "pubsub", "function"}
)
POLL_S = 0.1  # how long the reader waits for a line before it looks whether to stop


@dataclass(frozen=True, slots=True)
class Seen:
    at: float  # the server's clock, seconds since the epoch
    origin: str  # "host:port" of the connection that sent it, or SCRIPT
    name: str  # as commandstats names it: "get", "xinfo|stream"
    key: str  # its first key ("" for none)


def parse(words: list[str]) -> tuple[str, str]:
    """(name, first key) of a command's words."""
    name = words[0].lower()
    rest = words[1:]
    if name in CONTAINERS and rest:
        name, rest = f"{name}|{rest[0].lower()}", rest[1:]
    if name in ("xreadgroup", "xread"):
        upper = [w.upper() for w in rest]
        at = upper.index("STREAMS") + 1 if "STREAMS" in upper else len(rest)
        return name, rest[at] if at < len(rest) else ""
    if name in SCRIPT_CALLS:  # script, number of keys, keys...
        count = int(rest[1]) if len(rest) > 1 and rest[1].isdigit() else 0
        return name, rest[2] if count > 0 and len(rest) > 2 else ""
    return name, rest[0] if rest else ""


def seen(line: dict[str, Any]) -> Seen:
    """One MONITOR line as redis-py parses it (``Monitor.next_command``)."""
    name, key = parse(str(line["command"]).split(" "))
    if line.get("client_type") == "lua" or line.get("client_address") == "lua":
        origin = SCRIPT
    else:
        origin = f"{line.get('client_address', '')}:{line.get('client_port', '')}"
    return Seen(float(line["time"]), origin, name, key)


class Monitor:
    """``with Monitor(url) as m:``, then ``m.between(start, end)``: the commands run in that
    span of wall-clock time (this machine's clock is the server's: it runs on loopback)."""

    def __init__(self, url: str) -> None:
        self._client = redis.Redis.from_url(url, decode_responses=True)
        self._monitor: Any = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._seen: list[Seen] = []
        self.error: BaseException | None = None

    def __enter__(self) -> Monitor:
        self._monitor = self._client.monitor()  # type: ignore[no-untyped-call]
        self._monitor.__enter__()  # sends MONITOR, reads its OK
        self._thread = threading.Thread(target=self._read, name="bench-monitor", daemon=True)
        self._thread.start()
        return self

    def _read(self) -> None:
        connection = self._monitor.connection
        try:
            # Once asked to stop, lines already sent are still read: the window's last ones.
            while connection.can_read(timeout=POLL_S) or not self._stop.is_set():
                if connection.can_read(timeout=0):
                    self._seen.append(seen(self._monitor.next_command()))
        except Exception as exc:  # reported by between(): a window without its lines is wrong
            self.error = exc

    def __exit__(
        self,
        kind: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=10)
        self._monitor.__exit__(kind, exc, tb)
        self._client.close()

    def between(self, start: float, end: float) -> list[Seen]:
        """What ran from ``start`` to ``end`` (``time.time()``), once the monitor is closed."""
        if self.error is not None:
            raise RuntimeError(f"MONITOR failed: {self.error}") from self.error
        return [s for s in self._seen if start <= s.at <= end]
