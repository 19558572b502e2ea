"""Where a replay starts and ends: ``--from`` and ``--to`` as stream ids. Pure.

A bound is an entry id (``1765000000000-3``, or its milliseconds alone, ``1765000000000``)
or an ISO 8601 time (UTC unless it says). Both ends are inclusive, as in XRANGE: a time
``--to`` takes every entry added in its millisecond.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime

from workers.core.errors import InvalidAction

MAX_SEQ = 18_446_744_073_709_551_615  # the largest sequence number of an entry id
FIRST = "-"  # XRANGE's "from the oldest entry"
LAST = "+"  # XRANGE's "to the newest entry"
_ID = re.compile(r"(\d{1,20})(?:-(\d{1,20}))?")


def parse_bound(text: str | None, field: str, end: bool) -> str:
    """``text`` as an entry id; empty: the stream's first (or, ``end``, last) entry.
    Raises ``InvalidAction`` naming ``field`` for what is neither an id nor a time."""
    text = (text or "").strip()
    if not text:
        return LAST if end else FIRST
    found = _ID.fullmatch(text)
    if found:
        ms, seq = int(found.group(1)), found.group(2)
        if seq is not None:
            return f"{ms}-{int(seq)}"
        # The milliseconds alone mean all of that millisecond, as XRANGE reads them.
        return f"{ms}-{MAX_SEQ}" if end else f"{ms}-0"
    try:
        at = datetime.fromisoformat(text)
    except ValueError:
        raise InvalidAction(
            field, f"{text!r} is neither a stream entry id (<ms>-<seq>) nor an ISO 8601 time"
        ) from None
    ms = int((at if at.tzinfo else at.replace(tzinfo=UTC)).timestamp() * 1000)
    if ms < 0:
        raise InvalidAction(field, f"{text!r} is before 1970: no stream id falls there")
    return f"{ms}-{MAX_SEQ}" if end else f"{ms}-0"


def id_order(entry_id: str) -> tuple[int, int]:
    """Sort key of an id: stream order, not string order (``10-0`` after ``9-0``)."""
    ms, _, seq = entry_id.partition("-")
    return int(ms), int(seq or 0)


def check_order(start: str, end: str) -> None:
    """Refuse a range that ends before it starts (either end open is always fine)."""
    if start != FIRST and end != LAST and id_order(start) > id_order(end):
        raise InvalidAction("from", f"the range starts ({start}) after it ends ({end})")


def id_ms(entry_id: str) -> int:
    return int(entry_id.partition("-")[0])


def as_time(entry_id: str) -> str:
    """An id's milliseconds as a UTC time, for messages."""
    at = datetime.fromtimestamp(id_ms(entry_id) / 1000, UTC)
    return at.isoformat(timespec="milliseconds").replace("+00:00", "Z")
