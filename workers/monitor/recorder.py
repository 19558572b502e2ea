"""The history recorder: one per deployment, whether or not a browser is open, and quiet at rest.

Every ``runworker`` process (and the console's daphne process) runs a candidate in a daemon
thread. A candidate on standby tries for the recorder lease (``SET NX PX`` on
``keys.history_recorder``, 10 s) once every 10 s: one command. The holder ticks once a second
with one pipelined round trip: what a point holds of each stream (two commands a stream,
``history.read_streams``), the lease's renewal every third of its lifetime and the stream
names every 10 s. It writes (one script call, history.py) only when that differs from the
point it wrote last, or every 10 s to keep the history fresh; a write fills the quiet seconds
before it with copies of the last point. A holder that dies is replaced within the lease's
lifetime plus a standby interval; one that stops cleanly releases the lease, and a standby
takes it at its next try.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import socket
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import redis

from workers.core.keys import Keys, is_dead_stream
from workers.core.lua import lua_script
from workers.monitor.history import (
    RESOLUTIONS,
    HistoryStore,
    queue_stream_reads,
    queue_type_reads,
    read_streams,
    read_types,
)
from workers.monitor.sample import MAX_STREAMS

log = logging.getLogger("streamdesk.recorder")

TICK_S = 1.0
# Ticks start this long after a whole second, so each lands in its own 1 s bucket even when
# one tick takes a little longer than another.
TICK_OFFSET_S = 0.05
# ``Lease``'s default (the console's broadcaster): a few ticks.
LEASE_TTL_MS = 3_000

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

    def clear_dead(self, holder: str) -> bool:
        """Remove ``holder``'s lease if it is a process of this host that no longer runs (a
        worker SIGKILLed and restarted here): True if it was removed. A holder elsewhere is
        left to its lease's expiry: this host cannot tell whether it lives."""
        if not dead_here(holder):
            return False
        self._release(keys=[self.key], args=[holder])
        return True


def dead_here(holder: str) -> bool:
    """Is ``holder`` (``holder_name``'s "role:host:pid:tag") a dead process of this host?"""
    parts = holder.split(":")
    if len(parts) != 4 or parts[1] != socket.gethostname() or not parts[2].isdigit():
        return False
    pid = int(parts[2])
    if pid == os.getpid():
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:  # alive, another user's
        return False
    return False


@dataclass(frozen=True, slots=True)
class Cadence:
    """How often the recorder talks to Redis. The defaults keep an idle fleet quiet (a standby
    costs 0.1 command/s); tests shorten them."""

    # A standby's tries for the lease; a dead holder is replaced within lease + standby.
    standby_s: float = 10.0
    # Renewed every third of it, so two renewals may fail before it expires.
    lease_ttl_ms: int = 10_000
    # The longest a holder goes without writing: the rates' baseline (at most 30 s old) and
    # the charts' newest point stay fresh, and one write never adds more than ~10 points.
    keepalive_ms: int = 10_000
    # How long the stream names (``SMEMBERS``) are kept between reads.
    names_s: float = 10.0


# The resolutions the console's sampler kept before the recorder (Keys.retired_history).
RETIRED_RESOLUTIONS = ("1s", "1m")


@dataclass(frozen=True, slots=True)
class _Written:
    streams: str  # the point's "s", as JSON: compared with each tick's
    at_ms: int
    at_monotonic_s: float
    types: str = "{}"  # the point's "y", as JSON: read only while something runs


class Recorder:
    def __init__(
        self, client: redis.Redis, keys: Keys, holder: str, cadence: Cadence | None = None
    ) -> None:
        self.client = client
        self.keys = keys
        self.cadence = cadence or Cadence()
        self.lease = Lease(client, keys.history_recorder, holder, self.cadence.lease_ttl_ms)
        self.store = HistoryStore(client, keys)
        self.holding = False
        self._retired_deleted = False
        self._renewed_s = 0.0
        self._names: list[str] | None = None
        self._names_read_s = 0.0
        self._written: _Written | None = None
        # The last tick wrote a change: the next one reads the per-type hashes too.
        self._active = False

    def tick(self) -> int | None:
        """Take the lease if free (one command), and if this process holds it record what
        changed. The number of resolutions appended to (0 when nothing changed, or every
        bucket already had its point), None when standing by."""
        if not self.holding and not self._take():
            return None
        if not self._retired_deleted:  # once per process, by the deployment's recorder
            self.client.delete(*(self.keys.retired_history(r) for r in RETIRED_RESOLUTIONS))
            self._keep_untagged_history()
            self._retired_deleted = True
        return self._record()

    def _take(self) -> bool:
        ttl_ms = self.cadence.lease_ttl_ms
        if not self.client.set(self.lease.key, self.lease.holder, nx=True, px=ttl_ms):
            return False
        self.holding, self._renewed_s, self._written = True, time.monotonic(), None
        return True

    def _record(self) -> int | None:
        read = self._read()
        if read is None:
            self._stand_by()
            return None
        streams, types = read
        written, now_s = self._written, time.monotonic()
        changed = written is None or written.streams != streams
        if types is None:
            # At rest the per-type hashes are not read: a run that ends changes its stream's
            # counters too, so they only need reading once the streams changed (then every
            # tick while it runs). Quiet ticks cost what they did before.
            types = self._read_types() if changed else (written.types if written else "{}")
        # A new holder's first write is no sign that anything runs.
        self._active = written is not None and (changed or written.types != types)
        if (
            written is not None
            and not changed
            and written.types == types
            and (now_s - written.at_monotonic_s) * 1000 < self.cadence.keepalive_ms
        ):
            return 0  # a quiet tick: the one round trip of _read
        carry = written.at_ms if written is not None else 0
        recorded = self.store.append(streams, self.lease.holder, carry_from_ms=carry, types=types)
        if recorded is None:
            self._stand_by()
            return None
        if recorded.added:  # else its second had a point already (the last holder's): again
            self._written = _Written(streams, recorded.at_ms, now_s, types)
        return recorded.added

    def _read_types(self) -> str:
        """The point's "y" as JSON, in a round trip of its own (``_read`` adds it to its
        own round trip while something runs)."""
        with self.client.pipeline(transaction=False) as pipe:
            queue_type_reads(pipe, self.keys)
            durations, usage = pipe.execute(raise_on_error=False)
        return _dump(read_types(durations, usage))

    def _read(self) -> tuple[str, str | None] | None:
        """The point's streams as JSON, in one round trip (two when the stream names
        changed), with its types' JSON while something runs (else None); None if the lease
        was lost (a renewal found the key gone)."""
        now_s = time.monotonic()
        renew = (now_s - self._renewed_s) * 1000 >= self.cadence.lease_ttl_ms / 3
        refresh = self._names is None or now_s - self._names_read_s >= self.cadence.names_s
        names = self._names or []
        with self.client.pipeline(transaction=False) as pipe:
            if renew:
                # Someone else's lease (ours expired and was taken) is only made to last a
                # little longer: the write's lease check finds out, within the keepalive.
                pipe.pexpire(self.lease.key, self.cadence.lease_ttl_ms)
            if refresh:
                pipe.smembers(self.keys.streams_index)
            queue_stream_reads(pipe, self.keys, names)
            active = self._active
            if active:
                queue_type_reads(pipe, self.keys)
            replies: list[Any] = pipe.execute(raise_on_error=False)
        if renew:
            renewed = replies.pop(0)
            if isinstance(renewed, Exception) or not renewed:
                return None  # the key is gone: another candidate may take it
            self._renewed_s = now_s
        if refresh:
            members = replies.pop(0)
            if not isinstance(members, Exception):
                self._names_read_s, self._names = now_s, _stream_names(members)
            if self._names != names:
                return self._read()  # the new names' numbers: a change, so a write follows
        types = _dump(read_types(*replies[-2:])) if active else None
        return _dump(read_streams(names, replies[: 2 * len(names)])), types

    def _stand_by(self) -> None:
        self.holding = False
        self._names = None

    def _keep_untagged_history(self) -> None:
        """History recorded before its keys had a hash tag is renamed, not lost. Only a
        single server can hold it (the untagged keys sit in other slots of a cluster, where
        the recorder never ran)."""
        for resolution in RESOLUTIONS:
            old = self.keys.untagged_history(resolution.name)
            if self.client.exists(old):
                self.client.renamenx(old, self.keys.history(resolution.name))
                self.client.delete(old)  # left when a newer recorder had begun the new key

    def wait_s(self) -> float:
        """Until the next tick: the next whole second while holding, else a standby's wait."""
        if self.holding:
            return TICK_S - time.time() % TICK_S + TICK_OFFSET_S
        return self.cadence.standby_s

    def release(self) -> None:
        """Give the lease up (if still ours): a standby takes it at its next try."""
        if self.holding:
            self.holding = False
            self.lease.release()


def _stream_names(members: Any) -> list[str]:
    """As ``sample.collect`` picks them: sorted, no dead-letter streams, at most MAX_STREAMS."""
    return [n for n in sorted(str(m) for m in members) if not is_dead_stream(n)][:MAX_STREAMS]


def _dump(streams: dict[str, Any]) -> str:
    return json.dumps(streams, separators=(",", ":"))


def _candidate(
    connect: Callable[[], redis.Redis],
    keys: Keys,
    holder: str,
    cadence: Cadence,
    stop: threading.Event,
) -> None:
    recorder: Recorder | None = None
    failing = False
    while not stop.is_set():
        try:
            if recorder is None:  # connect inside the loop: Redis may be down at the start
                recorder = Recorder(connect(), keys, holder, cadence)
            recorder.tick()
            if failing:
                log.info("history recorder %s: Redis is back", holder)
            failing = False
        except Exception as exc:  # a Redis outage must not end the recorder
            if not failing:  # once per outage, not once a second
                log.warning("history recorder %s: tick failed: %s", holder, exc)
            failing = True
        stop.wait(recorder.wait_s() if recorder is not None else TICK_S)
    if recorder is not None:
        with contextlib.suppress(redis.RedisError):
            recorder.release()


@dataclass(frozen=True, slots=True)
class RecorderThread:
    thread: threading.Thread
    stop_event: threading.Event

    def stop(self, timeout_s: float = 5.0) -> None:
        self.stop_event.set()
        self.thread.join(timeout_s)


def start_recorder(
    connect: Callable[[], redis.Redis], keys: Keys, role: str, cadence: Cadence | None = None
) -> RecorderThread:
    """A candidate recorder in a daemon thread (it never keeps a process from exiting);
    ``connect`` is called in the thread, until it succeeds."""
    stop = threading.Event()
    thread = threading.Thread(
        target=_candidate,
        args=(connect, keys, holder_name(role), cadence or Cadence(), stop),
        name="history-recorder",
        daemon=True,
    )
    thread.start()
    return RecorderThread(thread, stop)
