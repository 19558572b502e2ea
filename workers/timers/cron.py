"""Five-field cron expressions: parse one, and find the tick before or after a moment.

``minute hour day-of-month month day-of-week``, each ``*``, ``*/n``, ``a``, ``a-b``,
``a-b/n``, ``a/n`` (from ``a`` to the end, every ``n``) or a comma list of those; months
and weekdays may be named (``JAN``-``DEC``, ``SUN``-``SAT``, any case); weekday 0 and 7 are
both Sunday. As in Vixie cron, when both day fields are restricted a day matches if either
does. Pure: no I/O, no clock (callers pass the moment in).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

from workers.core.errors import InvalidSchedule

MONTHS = ("JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL", "AUG", "SEP", "OCT", "NOV", "DEC")
WEEKDAYS = ("SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT")

# (name, lowest, highest, names for lowest..)
_FIELDS = (
    ("minute", 0, 59, ()),
    ("hour", 0, 23, ()),
    ("day of month", 1, 31, ()),
    ("month", 1, 12, MONTHS),
    ("day of week", 0, 7, WEEKDAYS),
)
# Far enough for any satisfiable expression (Feb 29 on a given weekday recurs within 28 years);
# an expression with no tick in that span (``0 0 31 2 *``) is refused when parsed.
_SEARCH_DAYS = 366 * 28


@dataclass(frozen=True, slots=True)
class Cron:
    """A parsed expression: the allowed values of each field."""

    expression: str
    minutes: frozenset[int]
    hours: frozenset[int]
    days: frozenset[int]
    months: frozenset[int]
    weekdays: frozenset[int]  # 0 = Sunday .. 6 = Saturday (7 folded into 0)
    any_day: bool  # day of month was ``*``
    any_weekday: bool  # day of week was ``*``

    def day_matches(self, day: datetime) -> bool:
        if day.month not in self.months:
            return False
        dom = day.day in self.days
        dow = (day.isoweekday() % 7) in self.weekdays
        if self.any_day or self.any_weekday:
            return dom and dow  # one of them matches every day
        return dom or dow

    def next_after(self, moment_s: float, zone: str = "UTC") -> float:
        """The first tick strictly after ``moment_s`` (epoch seconds), as epoch seconds."""
        tz = _zone(zone)
        start = _local(moment_s, tz).replace(second=0, microsecond=0) + timedelta(minutes=1)
        at = self._search(start, step=1)
        while _epoch(at, tz) <= moment_s:  # a skipped local hour can map back: step on
            at = self._search(at + timedelta(minutes=1), step=1)
        return _epoch(at, tz)

    def last_at_or_before(self, moment_s: float, zone: str = "UTC") -> float:
        """The latest tick at or before ``moment_s`` (epoch seconds), as epoch seconds."""
        tz = _zone(zone)
        at = self._search(_local(moment_s, tz).replace(second=0, microsecond=0), step=-1)
        while _epoch(at, tz) > moment_s:
            at = self._search(at - timedelta(minutes=1), step=-1)
        return _epoch(at, tz)

    def _search(self, at: datetime, step: int) -> datetime:
        """The nearest matching minute from ``at`` (included) forwards (``step`` 1) or
        backwards (-1), on naive wall-clock datetimes: whole days, then hours, then minutes
        are skipped, so a search takes at most a few thousand steps."""
        limit = at + timedelta(days=_SEARCH_DAYS * step)
        while (at <= limit) if step > 0 else (at >= limit):
            if not self.day_matches(at):
                at = _day_edge(at, step)
            elif at.hour not in self.hours:
                at = _hour_edge(at, step)
            elif at.minute not in self.minutes:
                at += timedelta(minutes=step)
            else:
                return at
        raise InvalidSchedule(f"cron {self.expression!r} never fires")


def parse(expression: str) -> Cron:
    """``expression`` parsed; InvalidSchedule naming the field and what is wrong with it."""
    fields = expression.split()
    if len(fields) != 5:
        raise InvalidSchedule(
            f"cron {expression!r}: expected 5 fields (minute hour day-of-month month "
            f"day-of-week), got {len(fields)}"
        )
    values = [_field(text, spec, expression) for text, spec in zip(fields, _FIELDS, strict=True)]
    weekdays = frozenset(v % 7 for v in values[4])
    cron = Cron(
        expression=" ".join(fields),
        minutes=values[0],
        hours=values[1],
        days=values[2],
        months=values[3],
        weekdays=weekdays,
        # As cronie: a day field starting with ``*`` (``*/2`` too) does not restrict.
        any_day=fields[2].startswith("*"),
        any_weekday=fields[4].startswith("*"),
    )
    cron.next_after(0.0)  # refuses one that never fires (Feb 30) now, not at its first tick
    return cron


_Spec = tuple[str, int, int, tuple[str, ...]]


def _field(text: str, spec: _Spec, expression: str) -> frozenset[int]:
    name, low, high, names = spec
    found: set[int] = set()
    for part in text.split(","):
        try:
            found |= _part(part, low, high, names)
        except ValueError as exc:
            raise InvalidSchedule(f"cron {expression!r}: {name} {text!r}: {exc}") from None
    return frozenset(found)


def _part(part: str, low: int, high: int, names: tuple[str, ...]) -> set[int]:
    span, slash, every = part.partition("/")
    step = _number(every, names, low) if slash else 1
    if slash and step < 1:
        raise ValueError("a step must be at least 1")
    if span == "*":
        first, last = low, high
    elif "-" in span:
        a, _, b = span.partition("-")
        first, last = _number(a, names, low), _number(b, names, low)
    else:
        first = _number(span, names, low)
        last = high if slash else first  # ``a/n``: from a to the end
    for value in (first, last):
        if not low <= value <= high:
            raise ValueError(f"{value} is out of range {low}-{high}")
    if first > last:
        raise ValueError(f"range {first}-{last} runs backwards")
    return set(range(first, last + 1, step))


def _number(text: str, names: tuple[str, ...], low: int) -> int:
    if text.isdigit():
        return int(text)
    upper = text.upper()
    if upper in names:
        return names.index(upper) + low
    expected = "a number" + (f" or a name ({names[0]}..{names[-1]})" if names else "")
    raise ValueError(f"{text!r} is not {expected}")


def _zone(name: str) -> ZoneInfo:
    try:
        return ZoneInfo(name)
    except (ValueError, KeyError) as exc:  # ZoneInfoNotFoundError is a KeyError
        raise InvalidSchedule(f"unknown time zone {name!r}") from exc


def _local(moment_s: float, tz: ZoneInfo) -> datetime:
    return datetime.fromtimestamp(moment_s, UTC).astimezone(tz).replace(tzinfo=None)


def _epoch(local: datetime, tz: ZoneInfo) -> float:
    return local.replace(tzinfo=tz).timestamp()


def _day_edge(at: datetime, step: int) -> datetime:
    midnight = at.replace(hour=0, minute=0)
    return midnight + timedelta(days=1) if step > 0 else midnight - timedelta(minutes=1)


def _hour_edge(at: datetime, step: int) -> datetime:
    top = at.replace(minute=0)
    return top + timedelta(hours=1) if step > 0 else top - timedelta(minutes=1)
