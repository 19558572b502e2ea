"""The fleet's timer, one pass at a time: move due delayed events, publish due schedule ticks.

Only the holder of ``Keys.timers_lease`` runs passes (``Timer.work``); every script it runs
is safe to race (a delayed event is XADDed and removed in one script; a tick is recorded and
XADDed in one script), so the lease saves work, it does not make the guarantee. A pass says
how long the holder may sleep: until the first delayed event or tick is due, at most
``max_sleep_s`` (it renews its lease then), or for ever when there is nothing at all.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import redis

from workers.core.keys import Keys
from workers.core.lua import lua_script
from workers.monitor.recorder import Lease
from workers.redis.pipelines import server_ms
from workers.timers.delayed import Mover
from workers.timers.schedules import Schedule, iso_ms

log = logging.getLogger("streamdesk.timers")

FIRE = lua_script(__package__, "fire_tick")
# What the timer needs to publish a tick: its (partition) stream and envelope JSON. The edge
# builds it (the registry validates the data; the partition is the schedule name's).
EntryFor = Callable[[Schedule, int], tuple[str, str]]


@dataclass(frozen=True, slots=True)
class TimerCadence:
    """How the timer spends Redis commands. Nothing at all while no delayed event waits and
    no schedule is declared; otherwise one renewal and one look per ``max_sleep_s`` at
    rest, and a standby's one PTTL per lease period."""

    # A holder that dies is replaced within this (plus a standby's margin): shorter than
    # the default schedule grace (60 s), so its death alone never skips a tick.
    lease_ttl_ms: int = 30_000
    # The holder's longest sleep: it renews the lease and looks again at least this often.
    max_sleep_s: float = 20.0
    # The shortest: under a stream of delayed events a pass moves what fell due meanwhile,
    # at most 20 passes a second, and lateness stays far below a second.
    min_sleep_s: float = 0.05
    # A standby tries again this long after the lease would expire (clock drift, the
    # holder's renewal in flight).
    standby_margin_s: float = 0.25


class Timer:
    def __init__(
        self,
        client: redis.Redis,
        keys: Keys,
        schedules: list[Schedule],
        entry_for: EntryFor,
        holder: str,
        cadence: TimerCadence | None = None,
    ) -> None:
        self.client = client
        self.keys = keys
        self.schedules = schedules
        self.entry_for = entry_for
        self.cadence = cadence or TimerCadence()
        self.lease = Lease(client, keys.timers_lease, holder, self.cadence.lease_ttl_ms)
        self.mover = Mover(client, keys)
        self._fire = client.register_script(FIRE)
        # The newest tick of each schedule this holder has handled: no script call until the
        # next one is due. Forgotten when the lease is lost (another holder went on).
        self._handled: dict[str, int] = {}
        self._renewed_s = -1e9
        self.holding = False

    def hold(self) -> bool:
        """Take the lease, or keep it (renewed once a third of it has passed): True while
        this timer holds it."""
        now_s = time.monotonic()
        if self.holding and (now_s - self._renewed_s) * 1000 < self.cadence.lease_ttl_ms / 3:
            return True
        held = self.lease.hold()
        if held:
            self._renewed_s = now_s
        elif self.holding:
            log.warning("timer lease lost to another process")
        if not held:
            self._handled.clear()
        self.holding = held
        return held

    def release(self) -> None:
        if self.holding:
            self.holding = False
            self.lease.release()

    def standby_s(self) -> float:
        """How long a standby waits before trying the lease again: until it expires, or not
        at all when its holder was a process of this host that died (a worker SIGKILLed
        and started again: the sleeps and timeouts due meanwhile are not held up for the
        rest of the lease)."""
        with self.client.pipeline(transaction=False) as pipe:
            pipe.get(self.keys.timers_lease)
            pipe.pttl(self.keys.timers_lease)
            holder, ttl_ms = pipe.execute()
        if holder and self.lease.clear_dead(str(holder)):
            log.info("timer lease of %s cleared: that process of this host is gone", holder)
            return 0.0
        return max(int(ttl_ms), 0) / 1000 + self.cadence.standby_margin_s

    def work(self) -> float | None:
        """One pass: seconds until something is due (at most ``max_sleep_s``), or None when
        no delayed event waits and no schedule is declared."""
        next_ms: list[int] = []
        now_ms = 0
        for stream in sorted(str(s) for s in self.client.smembers(self.keys.delayed_streams)):  # type: ignore[union-attr]
            moved = self.mover.move_due(stream)
            now_ms = moved.server_ms
            if moved.next_due_ms is not None:
                next_ms.append(moved.next_due_ms)
        if self.schedules:
            now_ms = now_ms or server_ms(self.client)
            next_ms += [self._tick(one, now_ms) for one in self.schedules]
        if not next_ms:
            return None
        wait_s = (min(next_ms) - now_ms) / 1000
        return min(max(wait_s, self.cadence.min_sleep_s), self.cadence.max_sleep_s)

    def _tick(self, one: Schedule, now_ms: int) -> int:
        """Publish ``one``'s latest tick if no one has; when its next tick is due (ms)."""
        tick = one.last_tick_ms(now_ms)
        if self._handled.get(one.name, 0) < tick:
            try:
                self._publish(one, tick)
            except redis.RedisError:
                raise
            except Exception:  # a schedule whose event no longer builds must not stop others
                log.exception("schedule %s: tick %s not published", one.name, iso_ms(tick))
            self._handled[one.name] = tick
        return one.next_tick_ms(now_ms)

    def _publish(self, one: Schedule, tick: int) -> None:
        stream, payload = self.entry_for(one, tick)
        grace_ms = round(one.grace_s * 1000)
        keys = [self.keys.schedule_ticks(stream), stream]
        reply: list[Any] = self._fire(keys=keys, args=[one.name, tick, payload, grace_ms])
        outcome = int(reply[0])
        if outcome == 1:
            self._published(one, tick, int(reply[2]))
        elif outcome == -1 and int(reply[1]) == 0:
            # Never published before (a new schedule): it starts with its next tick.
            log.info("schedule %s: first tick %s", one.name, iso_ms(one.next_tick_ms(tick)))
        elif outcome == -1:
            log.warning(
                "schedule %s: tick %s skipped, missed by more than its grace (%g s)",
                one.name,
                iso_ms(tick),
                one.grace_s,
            )

    def _published(self, one: Schedule, tick: int, previous: int) -> None:
        late_s = time.time() - tick / 1000
        log.info("schedule %s: published tick %s (%.1f s after it)", one.name, iso_ms(tick), late_s)
        if previous and one.next_tick_ms(previous) < tick:
            # Ticks between the last published and this one fell outside the grace.
            log.warning(
                "schedule %s: ticks after %s and before %s were skipped (missed by more "
                "than its grace, %g s)",
                one.name,
                iso_ms(previous),
                iso_ms(tick),
                one.grace_s,
            )
