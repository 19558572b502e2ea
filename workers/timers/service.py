"""A timer candidate in a daemon thread of each ``runworker`` process: one holds the lease
and runs the fleet's timer, the others stand by, and all are silent when there is nothing.

The candidate subscribes to ``Keys.timers_channel`` and sleeps on the subscription, so a
wake-up costs no command: a publisher says when a delayed event became the first due of its
stream, a holder says when it stops (``released``) or finds nothing left (``idle``). While
something may be due, the holder passes (``timer.Timer.work``) when it is due and at least
every ``max_sleep_s``; a standby tries the lease when it would expire. With no delayed event
and no schedule every candidate is dormant: no command at all until a wake-up. The channel
only wakes: at start, after a lost subscription and on any wake-up, the candidate looks at
Redis itself.
"""

from __future__ import annotations

import contextlib
import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass

import redis

from workers.core.keys import Keys
from workers.monitor.recorder import holder_name
from workers.timers.schedules import Schedule
from workers.timers.timer import EntryFor, Timer, TimerCadence
from workers.timers.wakeups import OwnSubscription, Relayed, Wakeups

log = logging.getLogger("streamdesk.timers")

RECONNECT_MAX_S = 5.0
IDLE = "idle"
RELEASED = "released"
STOP = "stop"


class Candidate:
    """One process's timer candidate; ``run`` is the thread's body."""

    def __init__(
        self,
        connect: Callable[[], redis.Redis],
        keys: Keys,
        schedules: list[Schedule],
        entry_for: EntryFor,
        holder: str,
        cadence: TimerCadence | None,
        stop: threading.Event,
        wakeups: Wakeups,
    ) -> None:
        self.connect = connect
        self.keys = keys
        self.schedules = schedules
        self.entry_for = entry_for
        self.holder = holder
        self.cadence = cadence or TimerCadence()
        self.stop = stop
        self.wakeups = wakeups
        self.timer: Timer | None = None

    def run(self) -> None:
        delay = 0.1
        while not self.stop.is_set():
            try:
                client = self.connect()
                self.timer = Timer(
                    client, self.keys, self.schedules, self.entry_for, self.holder, self.cadence
                )
                self._follow(client)
                delay = 0.1
            except (redis.RedisError, OSError) as exc:
                log.warning("timer %s: Redis lost (%s); again in %.1f s", self.holder, exc, delay)
                self.stop.wait(delay)
                delay = min(delay * 2, RECONNECT_MAX_S)
            except Exception:  # a bug must not end the fleet's timer in this process
                log.exception("timer %s failed; starting again in %.1f s", self.holder, delay)
                self.stop.wait(delay)
                delay = min(delay * 2, RECONNECT_MAX_S)
        self._release()

    def _follow(self, client: redis.Redis) -> None:
        """Hearing the channel: look, sleep until due or woken, look again."""
        try:
            self.wakeups.open(client, self.keys.timers_channel)
            active = True  # look once: what was left while no one listened
            while not self.stop.is_set():
                wait_s = None
                if active:
                    wait_s = self._step()
                    active = wait_s is not None  # None: dormant until a wake-up
                message = self.wakeups.next(wait_s)
                if message is not None:
                    active = self._woken(message, active)
                elif wait_s is not None:
                    active = True  # slept until due
        finally:
            self.wakeups.close()

    def _step(self) -> float | None:
        """Hold (or try for) the lease and pass; how long to sleep, None: dormant."""
        timer = self.timer
        assert timer is not None
        if not timer.hold():
            return timer.standby_s()
        wait_s = timer.work()
        if wait_s is None:
            # Nothing left: the lease goes, and the standbys are told they may sleep.
            timer.release()
            timer.client.publish(self.keys.timers_channel, f"{IDLE} {self.holder}")
        return wait_s

    def _woken(self, message: str, active: bool) -> bool:
        """Whether to look at Redis after ``message``: on every wake-up, but not after
        another holder's ``idle`` (it found nothing left); this candidate's own ``idle`` and
        a ``stop`` change nothing (a wake-up read before the own ``idle`` still counts).
        Nor does another's ``idle`` while this one holds the lease: it comes from a timer of
        another database on the same server (pub/sub channels are the server's), and going
        dormant on it left this holder's due events unmoved."""
        kind, _, who = message.partition(" ")
        if kind == IDLE:
            holding = self.timer is not None and self.timer.holding
            return active if who == self.holder or holding else False
        if kind == STOP:
            return active
        return True

    def _release(self) -> None:
        if self.timer is None or not self.timer.holding:
            return
        with contextlib.suppress(redis.RedisError, OSError):
            self.timer.release()
            # A standby takes over at once, not when the lease would have expired.
            self.timer.client.publish(self.keys.timers_channel, f"{RELEASED} {self.holder}")


@dataclass(frozen=True, slots=True)
class TimerThread:
    thread: threading.Thread
    stop_event: threading.Event
    candidate: Candidate

    def stop(self, timeout_s: float = 5.0) -> None:
        """Stop the candidate: its sleep ends at once."""
        self.stop_event.set()
        self.candidate.wakeups.put(f"{STOP} {self.candidate.holder}")
        self.thread.join(timeout_s)


def start_timer(
    connect: Callable[[], redis.Redis],
    keys: Keys,
    schedules: list[Schedule],
    entry_for: EntryFor,
    role: str = "runworker",
    cadence: TimerCadence | None = None,
    wakeups: Relayed | None = None,
) -> TimerThread:
    """A timer candidate in a daemon thread (it never keeps a process from exiting);
    ``connect`` is called in the thread, again after Redis was lost. ``wakeups``: the
    channel's messages relayed by the process's pub/sub listener (register it there); by
    default the candidate subscribes itself."""
    stop = threading.Event()
    heard: Wakeups = wakeups if wakeups is not None else OwnSubscription()
    holder = holder_name(role)
    candidate = Candidate(connect, keys, schedules, entry_for, holder, cadence, stop, heard)
    thread = threading.Thread(target=candidate.run, name="timer", daemon=True)
    thread.start()
    return TimerThread(thread, stop, candidate)
