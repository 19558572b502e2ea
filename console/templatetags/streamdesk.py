"""Numbers with their units: durations, rates, ratios and times, as the console shows them."""

from __future__ import annotations

import json
import time
from datetime import UTC, datetime
from typing import Any

from django import template
from django.utils.html import format_html
from django.utils.safestring import SafeString

from console.live.overview import worker_processes
from console.params import moment_of_ms
from workers.core.storable import exception_line
from workers.monitor.sample import WorkerInfo
from workers.operations.actions import Pause, parse_pause

register = template.Library()

NONE = "—"


@register.filter
def processes(workers: list[WorkerInfo]) -> int:
    """How many processes the heartbeats come from (one per partition a process reads)."""
    return worker_processes(workers)


@register.filter
def duration_ms(value: float | int | None) -> str:
    if value is None:
        return NONE
    ms = float(value)
    if ms < 1_000:
        return f"{ms:.0f} ms"
    s = ms / 1000
    if s < 60:
        return f"{s:.1f} s"
    if s < 3600:
        return f"{int(s // 60)} min {int(s % 60)} s"
    if s < 86400:
        return f"{int(s // 3600)} h {int(s % 3600 // 60)} min"
    return f"{int(s // 86400)} d {int(s % 86400 // 3600)} h"


@register.filter
def duration_s(value: float | int | None) -> str:
    return NONE if value is None else duration_ms(float(value) * 1000)


@register.filter
def run_time(seconds: float | None) -> str:
    """A run's duration: fractions of a millisecond are kept (a lookup agent takes 0.4 ms)."""
    if seconds is None:
        return NONE
    ms = float(seconds) * 1000
    if ms < 10:
        return f"{ms:.2g} ms" if ms < 1 else f"{ms:.1f} ms"
    return duration_ms(ms)


@register.filter
def since(start_ms: int | None, now_ms: int) -> str:
    if not start_ms:
        return NONE
    return duration_ms(max(now_ms - start_ms, 0))


@register.filter
def rate(value: float | None) -> str:
    if value is None:
        return NONE
    if value >= 100:
        return f"{value:,.0f}/s"
    return f"{value:.1f}/s" if value >= 1 or value == 0 else f"{value:.2f}/s"


@register.filter
def ratio(value: float | None) -> str:
    return NONE if value is None else f"{value * 100:.0f}%"


@register.filter
def num(value: int | float | None) -> str:
    if value is None:
        return NONE
    return f"{value:,}" if isinstance(value, int) else f"{value:,.1f}"


@register.filter
def ms_time(value: int | None) -> str:
    """A stream id's or a sample's millisecond clock as UTC time."""
    if not value:
        return NONE
    moment = moment_of_ms(value)
    if moment is None:
        return f"{value} ms (no date)"
    return moment.strftime("%Y-%m-%d %H:%M:%S.") + f"{moment.microsecond // 1000:03d} UTC"


def _moment(value: datetime | str | int | float | None) -> datetime | None:
    """A datetime, an ISO 8601 string or a millisecond clock (a stream id's, a sample's) as
    an aware UTC datetime; None for anything else."""
    if isinstance(value, datetime):
        moment = value
    elif isinstance(value, str):
        try:
            moment = datetime.fromisoformat(value)
        except ValueError:
            return None
    elif isinstance(value, int | float) and not isinstance(value, bool) and value > 0:
        found = moment_of_ms(value)
        if found is None:
            return None
        moment = found
    else:
        return None
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)


def age(seconds: float) -> str:
    """How long ago (or, negative, how far ahead) in the largest unit that says it shortly."""
    s = abs(seconds)
    if s < 1:
        return "just now"
    if s < 60:
        text = f"{s:.0f} s"
    elif s < 3600:
        text = f"{s // 60:.0f} min"
    elif s < 86400:
        text = f"{s // 3600:.0f} h {s % 3600 // 60:.0f} min"
    else:
        text = f"{s // 86400:.0f} d {s % 86400 // 3600:.0f} h"
    return f"{text} ago" if seconds > 0 else f"in {text}"


def _when(value: Any, now_ms: int | None, precise: bool) -> SafeString | str:
    moment = _moment(value)
    if moment is None:
        return NONE if not value else str(value)
    now = datetime.fromtimestamp((now_ms or time.time() * 1000) / 1000, tz=UTC)
    clock = moment.strftime("%H:%M:%S")
    if precise:
        clock += f".{moment.microsecond // 1000:03d}"
    day = "" if moment.date() == now.date() else moment.strftime("%Y-%m-%d ")
    iso = moment.isoformat()
    text = f"{day}{clock} UTC ({age((now - moment).total_seconds())})"
    return format_html('<time datetime="{}" title="{}">{}</time>', iso, iso, text)


@register.filter
def when(value: Any, now_ms: int | None = None) -> SafeString | str:
    """A moment for people: ``11:23:04 UTC (3 min ago)``, the date added when it is not
    today (UTC), the full ISO time in the title. ``now_ms`` (a sample's clock) keeps a
    pushed fragment consistent with its own figures; without it, the time of rendering."""
    return _when(value, now_ms, precise=False)


@register.filter
def when_precise(value: Any, now_ms: int | None = None) -> SafeString | str:
    """``when`` with milliseconds, for a timeline whose steps are that close together."""
    return _when(value, now_ms, precise=True)


@register.filter
def pause_note(value: str | None) -> Pause | None:
    """The group's pause flag as who and when (``workers.operations.actions.parse_pause``)."""
    return parse_pause(value) if value else None


@register.filter
def words(value: str) -> str:
    """``dead_lettered`` -> ``dead lettered``."""
    return value.replace("_", " ")


@register.filter
def last_line(value: str) -> str:
    """The exception line of a traceback: what an operator reads first."""
    return exception_line(value)


@register.filter
def as_json(value: Any) -> str:
    """A stored result as the JSON it was, not Python's repr."""
    return json.dumps(value, indent=2, ensure_ascii=False, default=str)


@register.filter
def multiline(value: str) -> bool:
    return "\n" in value.strip()


@register.filter
def first_line(value: str) -> str:
    return value.strip().splitlines()[0] if value.strip() else ""


@register.filter
def item(mapping: dict[str, Any], key: str) -> Any:
    """``mapping|item:key``: a dict lookup with a variable key."""
    return mapping.get(key) if mapping else None


@register.filter
def usd(value: float | None) -> str:
    """An estimated cost: cents for sums, fractions of a cent for the cheap calls they add up."""
    if value is None:
        return NONE
    return f"${value:,.2f}" if value >= 1 or value == 0 else f"${value:.4f}"


@register.filter
def per_time(rate_per_s: float | None) -> str:
    """A budget's refill rate in the largest unit that makes it at least 1: 50/s, 30/min, 10/h."""
    if rate_per_s is None:
        return NONE
    # Rounded, so a budget of 1/min reads 1/min, not 60.00/h after 0.99999... per minute.
    value, unit = round(rate_per_s, 6), "s"
    if value < 1:
        value, unit = round(rate_per_s * 60, 6), "min"
    if value < 1:
        value, unit = round(rate_per_s * 3600, 6), "h"
    return f"{value:,.{0 if value == round(value) else 2}f}/{unit}"


@register.filter
def clock_ms(value: int | None) -> str:
    """A millisecond clock as a time of day in UTC (hh:mm:ss UTC), for "retry at"."""
    moment = moment_of_ms(value) if value else None
    if moment is None:
        return str(value) if value else NONE
    return moment.strftime("%H:%M:%S UTC")
