"""Rates, health marks and history points derived from samples: plain Python, no I/O."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from workers.monitor.history import Point
from workers.monitor.sample import GroupInfo


@dataclass(frozen=True, slots=True)
class StreamRates:
    added_s: float | None
    processed_s: float
    failed_s: float
    dead_s: float
    hits_s: float
    # Events sent back to wait for a rate budget's token: not failures.
    deferred_s: float
    # Idempotency hits among everything the gate decided in the window; None when idle.
    hit_ratio: float | None
    # The window the rates are over, s (about RATE_WINDOW_MS; shorter just after a recorder
    # starts): the page says it beside the hit ratio, which otherwise reads as over the totals.
    window_s: float | None = None


@dataclass(frozen=True, slots=True)
class GroupRates:
    ack_s: float | None
    # Seconds to work off lag + pending at the current ack rate; None when unknown or stalled.
    drain_s: float | None


IDLE = StreamRates(None, 0.0, 0.0, 0.0, 0.0, 0.0, None)


def _delta(a: Any, b: Any) -> float | None:
    # A counter that went down was reset (a flushed or restarted Redis): no rate, not a negative.
    if a is None or b is None or b < a:
        return None
    return float(b - a)


def _per_s(a: Any, b: Any, dt_s: float) -> float:
    delta = _delta(a, b)
    return delta / dt_s if delta is not None else 0.0


def stream_rates(old: Point | None, new: Point, stream: str) -> StreamRates:
    if old is None or stream not in old["s"] or stream not in new["s"]:
        return IDLE
    dt_s = (new["t"] - old["t"]) / 1000
    if dt_s <= 0:
        return IDLE
    a, b = old["s"][stream], new["s"][stream]
    added = _delta(a["a"], b["a"])
    hits, processed = _per_s(a["h"], b["h"], dt_s), _per_s(a["p"], b["p"], dt_s)
    decided = hits + processed
    return StreamRates(
        added_s=added / dt_s if added is not None else None,
        processed_s=processed,
        failed_s=_per_s(a["f"], b["f"], dt_s),
        dead_s=_per_s(a["d"], b["d"], dt_s),
        hits_s=hits,
        deferred_s=_per_s(a.get("r"), b.get("r"), dt_s),
        hit_ratio=hits / decided if decided else None,
        window_s=dt_s,
    )


def group_rates(old: Point | None, new: Point, group: GroupInfo) -> GroupRates:
    before = old["s"].get(group.stream, {}).get("g", {}).get(group.name) if old else None
    if old is None or before is None or new["t"] <= old["t"]:
        return GroupRates(None, None)
    dt_s = (new["t"] - old["t"]) / 1000
    read = _delta(before[2], group.entries_read)
    pending = group.pending - int(before[1])
    # Entries the group read, minus those still pending, were acknowledged in the window.
    ack_s = max(read - pending, 0) / dt_s if read is not None else None
    backlog = (group.lag or 0) + group.pending
    if ack_s is None or group.lag is None:
        drain_s = None
    elif backlog == 0:
        drain_s = 0.0
    else:
        drain_s = backlog / ack_s if ack_s > 0 else None
    return GroupRates(ack_s, drain_s)
