"""An agent's waits: ``ctx.sleep``, ``ctx.sleep_until`` and ``ctx.wait_for_event``, each a
durable step. The first time, the wait is written down (workers/waits/) and ``Suspended``
is raised: the engine acks the entry and releases the lease, so the run holds no slot while
it waits. When the wait ends the event comes back, the run replays (stored steps are not run
again) and the same call now returns: the sleep is over, or the awaited event (None on a
timeout). docs/waits.md."""

from __future__ import annotations

import json
import math
import time
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any, Protocol

from workers.core.errors import StepError, Suspended
from workers.core.events import Envelope
from workers.core.matching import check_match
from workers.core.waiting import WaitBook, WaitFor

# Longer waits are refused: a typo of milliseconds for seconds should not park a run for
# decades. A year is far beyond any approval a person gives.
MAX_WAIT_S = 366 * 24 * 3600


def seconds_of(value: Any, what: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise StepError(f"{what} must be a finite number of seconds, got {value!r}")
    if value < 0 or value > MAX_WAIT_S:
        raise StepError(f"{what} must be 0 to {MAX_WAIT_S} seconds, got {value!r}")
    return float(value)


def epoch_ms_of(when: datetime | float) -> int:
    if isinstance(when, datetime):
        if when.tzinfo is None or when.utcoffset() is None:
            raise StepError(f"sleep_until needs a timezone-aware time, got {when.isoformat()}")
        return math.ceil(when.timestamp() * 1000)
    if isinstance(when, bool) or not isinstance(when, int | float) or not math.isfinite(when):
        raise StepError(f"sleep_until needs a datetime or epoch seconds, got {when!r}")
    return math.ceil(when * 1000)


class WaitingRun(Protocol):
    """What a wait needs of its agent's context (``AgentContext``): its durable steps."""

    event_hash: str
    event_type: str
    envelope: Envelope | None

    async def _lookup(self, name: str) -> tuple[bool, Any]: ...
    async def _store(self, name: str, value: Any, started: float) -> Any: ...


class RunWaits:
    """The waits of one run (``AgentContext.waits``): its book, its step names."""

    def __init__(self, ctx: WaitingRun, book: WaitBook | None) -> None:
        self.ctx = ctx
        self.book = book
        self._counts: dict[str, int] = {}

    def _name(self, name: str | None, auto: str) -> str:
        if name is not None:
            return name
        # Numbered in call order: the same on every replay of a run that waits the same way.
        self._counts[auto] = n = self._counts.get(auto, 0) + 1
        return f"{auto}#{n}"

    async def sleep(self, seconds: float, name: str | None = None) -> None:
        seconds = seconds_of(seconds, "sleep")
        step = self._name(name, "sleep")
        if seconds == 0:
            return
        delay_ms = math.ceil(seconds * 1000)
        await self._wait(WaitFor("sleep", step, delay_ms=delay_ms), f"sleeps {seconds:g} s")

    async def sleep_until(self, when: datetime | float, name: str | None = None) -> None:
        at_ms = epoch_ms_of(when)
        step = self._name(name, "sleep")
        if at_ms - time.time() * 1000 > MAX_WAIT_S * 1000:
            raise StepError(f"sleep_until is more than {MAX_WAIT_S} seconds ahead")
        await self._wait(WaitFor("sleep", step, at_ms=at_ms), "sleeps until a time")

    async def wait_for_event(
        self,
        event_type: str,
        match: Mapping[str, Any] | None = None,
        timeout_s: float | None = None,
        name: str | None = None,
        note: str | None = None,
    ) -> Envelope | None:
        if not isinstance(event_type, str) or not event_type:
            raise StepError(f"wait_for_event needs an event type, got {event_type!r}")
        fields = check_match(match)
        delay_ms = 0 if timeout_s is None else math.ceil(seconds_of(timeout_s, "timeout_s") * 1000)
        if timeout_s is not None and delay_ms == 0:
            raise StepError("timeout_s must be above 0 (None: no timeout)")
        step = self._name(name, f"wait:{event_type}")
        if note is not None and not isinstance(note, str):
            raise StepError(f"note must be a string, got {note!r}")
        on = WaitFor("event", step, event_type, fields, delay_ms=delay_ms, note=(note or "")[:2000])
        shown = ", ".join(f"{k}={v!r}" for k, v in fields.items())
        value = await self._wait(on, f"waits for {event_type}" + (f" ({shown})" if shown else ""))
        event = value.get("event") if isinstance(value, dict) else None
        return None if event is None else Envelope.model_validate(event)

    async def _wait(self, on: WaitFor, waits_for: str) -> Any:
        ctx = self.ctx
        found, value = await ctx._lookup(on.step)
        if found:
            return value
        if self.book is None:
            raise StepError(f"step {on.step!r}: this worker cannot keep waits")
        started = time.monotonic()
        envelope = ctx.envelope.to_json() if ctx.envelope is not None else ""
        state = await self.book.wait(ctx.event_hash, ctx.event_type, envelope, on)
        if state.state == "waiting":
            raise Suspended(_with_until(waits_for, state.until_ms), state.until_ms)
        if state.state == "answered":
            return await ctx._store(on.step, {"event": json.loads(state.answer)}, started)
        if state.state == "timed_out":
            outcome = {"event": None} if on.kind == "event" else {"slept_until": state.until_ms}
            return await ctx._store(on.step, outcome, started)
        raise StepError(f"step {on.step!r}: the wait ended {state.state}")


def _with_until(waits_for: str, until_ms: int) -> str:
    if not until_ms:
        return waits_for + "; no timeout"
    until = datetime.fromtimestamp(until_ms / 1000, UTC).isoformat(timespec="seconds")
    return f"{waits_for}; until {until}"
