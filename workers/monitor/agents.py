"""Per-agent figures from the run duration histogram and the model usage hash: plain Python.

An agent is an event type today (one agent per type); the figures are keyed by that name, so
a named agent (several per type, issue 31) can take its place without changing their shape.
A history point carries each type's histogram and usage as ``type_entry`` writes it, and the
rates and percentiles here compare two such entries.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from workers.redis import stats

# A point's per-type entry (history "y"): {"b": cumulative bucket counts, one per bound of
# stats.DURATION_BUCKETS_S then +Inf; "s": seconds in all; "u": [calls, prompt_tokens,
# completion_tokens, cost_usd]}.
TypeEntry = dict[str, Any]
Buckets = Sequence[tuple[float, float]]  # (upper bound, cumulative count), +Inf last


def type_entries(
    durations: Mapping[str, stats.Durations], usage: Mapping[str, Mapping[str, float]]
) -> dict[str, TypeEntry]:
    """Every type's entry for a history point, from a sample's ``durations`` and ``usage``."""
    out: dict[str, TypeEntry] = {}
    for event_type in sorted(set(durations) | set(usage)):
        d = durations.get(event_type)
        u = usage.get(event_type, {})
        out[event_type] = {
            "b": [n for _, n in d.buckets] if d else [0] * (len(stats.DURATION_BUCKETS_S) + 1),
            "s": round(d.sum_s, 6) if d else 0.0,
            "u": [int(u.get(f, 0)) for f in stats.USAGE_FIELDS[:3]]
            + [round(float(u.get("cost_usd", 0.0)), 6)],
        }
    return out


def quantile(q: float, buckets: Buckets) -> float | None:
    """The q-quantile (0..1) of a cumulative histogram, as Prometheus' histogram_quantile
    computes it: find the bucket holding the rank q x count, and interpolate linearly between
    its lower and upper bound (the first bucket's lower bound is 0). A rank in the +Inf bucket
    is the highest finite bound: nothing above it is known. None when the histogram is empty."""
    if not 0 <= q <= 1:
        raise ValueError(f"a quantile is between 0 and 1, not {q}")
    if not buckets or buckets[-1][1] <= 0:
        return None
    rank = q * buckets[-1][1]
    lower, below = 0.0, 0.0
    for i, (upper, cumulative) in enumerate(buckets):
        if cumulative >= rank and cumulative > below:
            if math.isinf(upper):
                return buckets[i - 1][0] if i > 0 else None
            return lower + (upper - lower) * (rank - below) / (cumulative - below)
        lower, below = upper, cumulative
    return None


def bounded(counts: Sequence[float]) -> list[tuple[float, float]]:
    """A point's ``"b"`` list with its bounds (stats.DURATION_BUCKETS_S, then +Inf)."""
    bounds = (*stats.DURATION_BUCKETS_S, math.inf)
    return list(zip(bounds, counts, strict=False))


def window(before: TypeEntry | None, after: TypeEntry) -> list[tuple[float, float]] | None:
    """The runs that ended between two entries, as a cumulative histogram (``after`` less
    ``before``); all of ``after`` without a ``before``. None when a count went down (the hash
    was reset or trimmed: no window to measure)."""
    b_after = list(after.get("b") or [])
    b_before = list(before.get("b") or []) if before else [0] * len(b_after)
    if len(b_before) != len(b_after):
        return None
    diff = [a - b for a, b in zip(b_after, b_before, strict=True)]
    if any(d < 0 for d in diff):
        return None
    return bounded(diff)


@dataclass(frozen=True, slots=True)
class Rates:
    """What changed between two points of one type, per second."""

    runs_per_s: float
    prompt_tokens_per_s: float
    completion_tokens_per_s: float
    cost_usd_per_s: float


def rates(before: TypeEntry | None, after: TypeEntry, dt_s: float) -> Rates | None:
    """The type's runs (attempts that ran to an end), tokens and cost per second between two
    entries ``dt_s`` apart; a type absent before counts from zero. None without a time between
    them, or when a count went down (a reset)."""
    if dt_s <= 0:
        return None
    runs = _delta(before, after, "b", -1)
    usage = [_delta(before, after, "u", i) for i in (1, 2, 3)]
    if runs is None or any(u is None for u in usage):
        return None
    prompt, completion, cost = (float(u or 0) for u in usage)
    return Rates(runs / dt_s, prompt / dt_s, completion / dt_s, cost / dt_s)


def _delta(before: TypeEntry | None, after: TypeEntry, field: str, index: int) -> float | None:
    try:
        b = float(after[field][index])
        a = float(before[field][index]) if before else 0.0
    except (KeyError, IndexError, TypeError, ValueError):
        return None
    return None if b < a else b - a


def mean_s(before: TypeEntry | None, after: TypeEntry) -> float | None:
    """The mean run time between two entries (their sums' change over their counts')."""
    runs = _delta(before, after, "b", -1)
    try:
        total = float(after["s"]) - (float(before["s"]) if before else 0.0)
    except (KeyError, TypeError, ValueError):
        return None
    return total / runs if runs else None
