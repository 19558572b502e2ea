"""Schedules: an event published on every tick of a cron expression, once for the fleet.

Declared in code (``@schedule("*/5 * * * *", type="report.due", data={...})``, registered in
``default_schedules`` when the module is imported, as ``@agent`` is) or in settings
(``STREAMDESK_SCHEDULES``: a list of mappings with the same names, or that list as JSON in
the environment variable). Pure: what a tick's event is and when it falls; the timer
(``service.py``) publishes it.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, TypeVar

from workers.core.errors import InvalidSchedule
from workers.core.keys import DEFAULT_STREAM
from workers.timers.cron import Cron, parse

# A tick may be published this late (a fleet restarting, the timer's holder replaced after
# it died) and no later: a tick missed by more is skipped and logged. Longer than the
# timer's lease, so a holder's death alone never skips a tick.
DEFAULT_GRACE_S = 60.0
SOURCE = "schedule"
_NAME = re.compile(r"^[^\s]{1,200}$")

F = TypeVar("F", bound=Callable[..., Any])


@dataclass(frozen=True, slots=True, eq=False)
class Schedule:
    """One schedule: on each tick of ``cron`` (in ``timezone``), an event of ``type`` with
    ``data`` goes to ``stream``. ``name`` identifies it across restarts (its last tick is
    recorded under it); by default ``<type> <cron>``."""

    cron: Cron
    type: str
    data: Mapping[str, Any] = field(default_factory=dict)
    name: str = ""
    stream: str = DEFAULT_STREAM
    subject: str | None = None
    grace_s: float = DEFAULT_GRACE_S
    timezone: str = "UTC"

    def last_tick_ms(self, now_ms: int) -> int:
        """The latest tick at or before ``now_ms``."""
        return round(self.cron.last_at_or_before(now_ms / 1000, self.timezone) * 1000)

    def next_tick_ms(self, now_ms: int) -> int:
        """The first tick after ``now_ms``."""
        return round(self.cron.next_after(now_ms / 1000, self.timezone) * 1000)

    def event_id(self, tick_ms: int) -> str:
        """The tick's event id: the same for every timer that builds it, so should two ever
        publish one tick, the idempotency gate still runs it once."""
        return f"{self.name}@{iso_ms(tick_ms)}"

    def envelope_fields(self, tick_ms: int) -> dict[str, Any]:
        """What ``build_envelope`` takes for this tick's event."""
        return {
            "source": SOURCE,
            "id": self.event_id(tick_ms),
            "subject": self.subject,
            "time": datetime.fromtimestamp(tick_ms / 1000, UTC),
        }


def make(
    cron: str,
    *,
    type: str,
    data: Mapping[str, Any] | None = None,
    name: str | None = None,
    stream: str = DEFAULT_STREAM,
    subject: str | None = None,
    grace_s: float = DEFAULT_GRACE_S,
    timezone: str = "UTC",
) -> Schedule:
    """A checked Schedule: InvalidSchedule names what is wrong."""
    if not isinstance(type, str) or not type:
        raise InvalidSchedule(f"schedule {cron!r}: type must be an event type, got {type!r}")
    if data is not None and not isinstance(data, Mapping):
        raise InvalidSchedule(f"schedule {cron!r}: data must be a mapping, got {data!r}")
    if isinstance(grace_s, bool) or not isinstance(grace_s, int | float) or not grace_s > 0:
        raise InvalidSchedule(f"schedule {cron!r}: grace_s must be > 0, got {grace_s!r}")
    parsed = parse(cron) if isinstance(cron, str) else _not_text(cron)
    parsed.next_after(0.0, timezone)  # an unknown time zone is refused now
    label = name or f"{type} {parsed.expression}"
    if not _NAME.match(label.replace(" ", "_")):
        raise InvalidSchedule(f"schedule name {label!r}: 1-200 characters, no tabs or newlines")
    return Schedule(
        parsed, type, dict(data or {}), label, stream, subject, float(grace_s), timezone
    )


def _not_text(cron: object) -> Cron:
    raise InvalidSchedule(f"a cron expression is text, got {cron!r}")


class Schedules:
    """The schedules a process declares, by name."""

    def __init__(self) -> None:
        self._by_name: dict[str, Schedule] = {}

    def add(self, one: Schedule) -> Schedule:
        """Register ``one``; a second one of the same name must be the same schedule (a
        module imported twice), else InvalidSchedule: give it its own ``name=``."""
        seen = self._by_name.get(one.name)
        if seen is not None and _same(seen, one):
            return seen
        if seen is not None:
            raise InvalidSchedule(
                f"two different schedules are named {one.name!r}: give each its own name="
            )
        self._by_name[one.name] = one
        return one

    def remove(self, name: str) -> None:
        self._by_name.pop(name, None)

    def __iter__(self) -> Iterator[Schedule]:
        return iter(sorted(self._by_name.values(), key=lambda s: s.name))

    def __len__(self) -> int:
        return len(self._by_name)


def _same(a: Schedule, b: Schedule) -> bool:
    fields = ("type", "name", "stream", "subject", "grace_s", "timezone")
    same_fields = all(getattr(a, f) == getattr(b, f) for f in fields)
    return same_fields and a.cron.expression == b.cron.expression and a.data == b.data


default_schedules = Schedules()


def schedule(cron: str, *, type: str, **options: Any) -> Callable[[F], F]:
    """Publish an event of ``type`` on every tick of ``cron`` (UTC unless ``timezone=``),
    once for the whole fleet. Registers at once, so ``schedule(...)`` works as a plain
    call too; as a decorator it returns the function unchanged (put it on the agent that
    handles the type, to keep the two together). Options: ``data``, ``name``, ``stream``,
    ``subject``, ``grace_s`` (default 60), ``timezone``."""
    default_schedules.add(make(cron, type=type, **options))

    def unchanged(fn: F) -> F:
        return fn

    return unchanged


def from_settings(raw: object) -> list[Schedule]:
    """``STREAMDESK_SCHEDULES``: a list of mappings (``cron``, ``type`` and ``make``'s
    options), or that list as JSON text; empty text is none."""
    if isinstance(raw, str):
        if not raw.strip():
            return []
        try:
            raw = json.loads(raw)
        except ValueError as exc:
            raise InvalidSchedule(f"STREAMDESK_SCHEDULES is not JSON: {exc}") from exc
    if not isinstance(raw, list | tuple):
        raise InvalidSchedule("STREAMDESK_SCHEDULES must be a list of schedules")
    found = []
    for n, item in enumerate(raw):
        if not isinstance(item, Mapping) or "cron" not in item or "type" not in item:
            raise InvalidSchedule(
                f"STREAMDESK_SCHEDULES[{n}] must be an object with cron and type, got {item!r}"
            )
        options = {k: v for k, v in item.items() if k != "cron"}
        try:
            found.append(make(str(item["cron"]), **options))
        except TypeError as exc:  # an option make() does not take
            raise InvalidSchedule(f"STREAMDESK_SCHEDULES[{n}]: {exc}") from exc
    return found


def iso_ms(ms: int) -> str:
    """Epoch ms as ISO 8601 UTC to the second: a tick in an event id or a log line."""
    return datetime.fromtimestamp(ms / 1000, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
