"""The history recorder: one per deployment, whether or not a browser is open.

Every ``runworker`` process (and the console's daphne process) runs a candidate in a daemon
thread. Once a second each candidate tries to hold the recorder lease (``SET NX PX`` on
``keys.history_recorder``, renewed by its holder); only the holder takes a sample
(workers/monitor/sample.py, three round trips whatever the streams' size) and records it
(workers/monitor/history.py). The others stand by at one round trip a second and take over within
the lease's lifetime when the holder stops; a holder that stops cleanly releases the lease,
so the next one takes over at its next tick.
"""

from __future__ import annotations

import contextlib
import logging
import os
import socket
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass

import redis

from workers.core.keys import Keys
from workers.core.lua import lua_script
from workers.monitor.history import RESOLUTIONS, HistoryStore, to_point
from workers.monitor.sample import collect

log = logging.getLogger("streamdesk.recorder")

TICK_S = 1.0
# A few ticks: a holder that dies (kill -9, a lost network) is replaced within this time.
LEASE_TTL_MS = 3_000
# Ticks start this long after a whole second, so each lands in its own 1 s bucket even when
# one tick takes a little longer than another.
TICK_OFFSET_S = 0.05

HOLD = lua_script(__package__, "lease_hold")
RELEASE = lua_script(__package__, "lease_release")


def holder_name(role: str) -> str:
    """Who holds a lease, readable with ``GET``: the role, host and pid, made unique."""
    return f"{role}:{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:6]}"


class Lease:
    """A short lease on one key: at most one holder at a time, kept by renewing it."""

    def __init__(
        self, client: redis.Redis, key: str, holder: str, ttl_ms: int = LEASE_TTL_MS
    ) -> None:
        self.key = key
        self.holder = holder
        self.ttl_ms = ttl_ms
        self._hold = client.register_script(HOLD)
        self._release = client.register_script(RELEASE)

    def hold(self) -> bool:
        """Take or renew the lease; True if this holder has it now."""
        return bool(self._hold(keys=[self.key], args=[self.holder, self.ttl_ms]))

    def release(self) -> None:
        """Give the lease up now (only if still ours), so a stand-by need not wait it out."""
        self._release(keys=[self.key], args=[self.holder])


# The resolutions the console's sampler kept before the recorder (Keys.retired_history).
RETIRED_RESOLUTIONS = ("1s", "1m")


class Recorder:
    def __init__(self, client: redis.Redis, keys: Keys, holder: str) -> None:
        self.client = client
        self.keys = keys
        self.lease = Lease(client, keys.history_recorder, holder)
        self.store = HistoryStore(client, keys)
        self._retired_deleted = False

    def tick(self) -> int | None:
        """Record one sample if this process holds the lease. The number of resolutions
        appended to (0 when every bucket already has its point), None when standing by."""
        if not self.lease.hold():
            return None
        if not self._retired_deleted:  # once per process, by the deployment's recorder
            self.client.delete(*(self.keys.retired_history(r) for r in RETIRED_RESOLUTIONS))
            self._keep_untagged_history()
            self._retired_deleted = True
        return self.store.record(to_point(collect(self.client, self.keys)), self.lease.holder)

    def _keep_untagged_history(self) -> None:
        """History recorded before its keys had a hash tag is renamed, not lost. Only a
        single server can hold it (the untagged keys sit in other slots of a cluster, where
        the recorder never ran)."""
        for resolution in RESOLUTIONS:
            old = self.keys.untagged_history(resolution.name)
            if self.client.exists(old):
                self.client.renamenx(old, self.keys.history(resolution.name))
                self.client.delete(old)  # left when a newer recorder had begun the new key

    def run(self, stop: threading.Event) -> None:
        """Tick about once a second until ``stop`` is set, then release the lease."""
        _tick_until(stop, self.lease.holder, self.tick)
        with contextlib.suppress(redis.RedisError):
            self.lease.release()


def _tick_until(stop: threading.Event, who: str, tick: Callable[[], object]) -> None:
    failing = False
    while not stop.is_set():
        try:
            tick()
            if failing:
                log.info("history recorder %s: Redis is back", who)
            failing = False
        except Exception as exc:  # a Redis outage must not end the recorder
            if not failing:  # once per outage, not once a second
                log.warning("history recorder %s: tick failed: %s", who, exc)
            failing = True
        stop.wait(TICK_S - time.time() % TICK_S + TICK_OFFSET_S)


def _candidate(
    connect: Callable[[], redis.Redis], keys: Keys, holder: str, stop: threading.Event
) -> None:
    recorder: list[Recorder] = []

    def tick() -> None:
        if not recorder:  # connect inside the loop: Redis may be down when the process starts
            recorder.append(Recorder(connect(), keys, holder))
        recorder[0].tick()

    _tick_until(stop, holder, tick)
    if recorder:
        with contextlib.suppress(redis.RedisError):
            recorder[0].lease.release()


@dataclass(frozen=True, slots=True)
class RecorderThread:
    thread: threading.Thread
    stop_event: threading.Event

    def stop(self, timeout_s: float = 5.0) -> None:
        self.stop_event.set()
        self.thread.join(timeout_s)


def start_recorder(connect: Callable[[], redis.Redis], keys: Keys, role: str) -> RecorderThread:
    """A candidate recorder in a daemon thread (it never keeps a process from exiting);
    ``connect`` is called in the thread, until it succeeds."""
    stop = threading.Event()
    thread = threading.Thread(
        target=_candidate,
        args=(connect, keys, holder_name(role), stop),
        name="history-recorder",
        daemon=True,
    )
    thread.start()
    return RecorderThread(thread, stop)
