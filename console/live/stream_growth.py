"""A stream that grows and that nothing trims: the Redis page's warning. Pure.

Growing is not trouble by itself: a busy stream under retention grows until its oldest
entry reaches the retention, then its trims keep it level. So the warning needs both:

- **growing**: the recorded lengths over the window (15 minutes: the deployment's recorded
  history, ``workers/monitor/history.py``) never went down and ended higher;
- **not trimmed**: retention is off (no age, no length cap), or the stream reaches past its
  retention (its oldest entry is older, or it is longer than the cap) and the trims are not
  doing it: none recorded, none for ``TRIM_STALE_MS``, or the last one held back by a group
  or not applied. A stream past its retention whose last trim ran a minute ago and was not
  held back is fine: ``XTRIM ~`` removes whole nodes, so its oldest entry may outlive the
  retention by a node's worth of entries.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass

from workers.monitor.history import Point
from workers.monitor.records import StreamInfo
from workers.retention import Retention
from workers.retention.policy import age_text
from workers.retention.record import entry_ms

GROWTH_WINDOW_MS = 15 * 60_000
# Workers trim each stream once a minute (retention/trimmer.TRIM_EVERY_MS): five missed
# turns is no trimmer, not a slow one.
TRIM_STALE_MS = 5 * 60_000
# The recorded points must cover this share of the window: a recorder that started 3
# minutes ago has not seen 15 minutes of growth.
COVERAGE = 0.9


@dataclass(frozen=True, slots=True)
class Growth:
    stream: str
    from_length: int
    to_length: int
    over_ms: int
    why: str  # why nothing trims it


def lengths(points: Sequence[Point], stream: str, since_ms: int) -> list[tuple[int, int]]:
    """(time, length) of ``stream`` in the recorded points from ``since_ms`` on, oldest first."""
    found = []
    for point in points:
        entry = point.get("s", {}).get(stream)
        if point.get("t", 0) >= since_ms and isinstance(entry, dict) and "n" in entry:
            found.append((int(point["t"]), int(entry["n"])))
    return sorted(found)


def grew(series: list[tuple[int, int]], window_ms: int) -> tuple[int, int, int] | None:
    """(first length, last length, span) when the lengths cover the window, never went
    down and ended higher; else None."""
    if len(series) < 2:
        return None
    (t0, first), (t1, last) = series[0], series[-1]
    if t1 - t0 < window_ms * COVERAGE or last <= first:
        return None
    if any(later < earlier for (_, earlier), (_, later) in itertools.pairwise(series)):
        return None  # it went down: something trims or deletes
    return first, last, t1 - t0


def past_retention(stream: StreamInfo, retention: Retention, now_ms: int) -> str:
    """How the stream reaches past its retention ("" if it does not)."""
    oldest_ms = entry_ms(stream.first_id)
    if retention.retention_s and oldest_ms is not None:
        age_ms = now_ms - oldest_ms
        if age_ms > retention.retention_s * 1000:
            return f"its oldest entry is {age_text(age_ms / 1000)} old"
    if retention.max_len and stream.length > retention.max_len:
        return f"it holds {stream.length:,} entries, over the cap of {retention.max_len:,}"
    return ""


def untrimmed(stream: StreamInfo, configured: Retention, now_ms: int) -> str:
    """Why nothing trims the stream ("" when its retention holds it). The settings are the
    last trim's (the workers' own) or, before one, this console's."""
    retention = stream.trim.retention if stream.trim is not None else configured
    if retention.off:
        return (
            "retention is off (STREAMDESK_RETENTION_S=0, no STREAMDESK_MAX_LEN): nothing trims it"
        )
    past = past_retention(stream, retention, now_ms)
    if not past:
        return ""  # busy, within its retention: growing is what it should do
    kept = retention.describe()
    trim = stream.trim
    if trim is None:
        return f"{past} ({kept}) and no worker has trimmed it (is a runworker of it running?)"
    if now_ms - trim.at_ms > TRIM_STALE_MS:
        since = age_text((now_ms - trim.at_ms) / 1000)
        return (
            f"{past} ({kept}) and its last trim was {since} ago "
            "(are its workers stopped or paused?)"
        )
    if trim.held_by:
        return (
            f"{past} ({kept}): group {trim.held_by} holds the trim back "
            "(it has not read or acknowledged older entries)"
        )
    if trim.note:
        return f"{past} ({kept}): {trim.note}"
    return ""  # trimmed within minutes: what is left is XTRIM ~'s whole nodes


def growth_warnings(
    streams: Sequence[StreamInfo],
    points: Sequence[Point],
    configured: Retention,
    now_ms: int,
    window_ms: int = GROWTH_WINDOW_MS,
) -> list[Growth]:
    """The streams that grew over the window and that nothing trims."""
    found = []
    for stream in streams:
        if not stream.exists or stream.error:
            continue
        # A tenth more than the window: the point that opened it may be a moment older.
        since_ms = now_ms - window_ms - window_ms // 10
        growth = grew(lengths(points, stream.name, since_ms), window_ms)
        why = untrimmed(stream, configured, now_ms) if growth else ""
        if growth and why:
            found.append(Growth(stream.name, growth[0], growth[1], growth[2], why))
    return found
