"""Per-agent figures (workers/monitor/agents.py): percentiles interpolated within the run
duration histogram's buckets as Prometheus' histogram_quantile does, and rates between two
recorded points. The histograms are built by the engine's own functions from run times."""

from __future__ import annotations

import math

import pytest

from workers.monitor import agents
from workers.redis import stats


def histogram(durations_s: list[float], event_type: str = "demo.echo") -> stats.Durations:
    """The hash the settle pipeline writes for these run times, read back as the sample does."""
    raw = {k: str(v) for k, v in stats.duration_increments({event_type: durations_s}).items()}
    return stats.durations_by_type(raw)[event_type]


def entry(durations_s: list[float], usage: dict[str, float] | None = None) -> agents.TypeEntry:
    return agents.type_entries({"t": histogram(durations_s)}, {"t": usage} if usage else {})["t"]


def quantile_of(q: float, durations_s: list[float]) -> float | None:
    h = histogram(durations_s)
    return agents.quantile(q, [(float(b), n) for b, n in h.buckets])


def test_quantile_interpolates_within_the_bucket() -> None:
    # 100 runs between 0.1 and 0.25 s: all in the (0.1, 0.25] bucket, so p50 is its middle.
    runs = [0.2] * 100
    assert quantile_of(0.5, runs) == pytest.approx(0.175)
    assert quantile_of(0.95, runs) == pytest.approx(0.1 + 0.15 * 0.95)


def test_quantile_matches_prometheus_across_buckets() -> None:
    # 90 fast runs (<= 5 ms) and 10 slow (1 < t <= 2.5 s): p50 in the first bucket from 0,
    # p95 half way through the slow bucket, p99 at 9/10 of it.
    runs = [0.003] * 90 + [2.0] * 10
    assert quantile_of(0.5, runs) == pytest.approx(0.005 * 50 / 90)
    assert quantile_of(0.95, runs) == pytest.approx(1.0 + 1.5 * 0.5)
    assert quantile_of(0.99, runs) == pytest.approx(1.0 + 1.5 * 0.9)


def test_quantile_in_the_inf_bucket_is_the_highest_bound() -> None:
    assert quantile_of(0.99, [600.0] * 10) == 300.0


def test_quantile_of_an_empty_histogram_is_none() -> None:
    assert agents.quantile(0.5, agents.bounded([0] * 16)) is None
    assert agents.quantile(0.5, []) is None


def test_quantile_refuses_a_q_outside_0_1() -> None:
    with pytest.raises(ValueError):
        agents.quantile(1.5, agents.bounded([1] * 16))


def test_window_is_the_runs_between_two_points() -> None:
    before = entry([0.003] * 90)
    after = entry([0.003] * 90 + [2.0] * 10)
    runs = agents.window(before, after)
    assert runs is not None and runs[-1] == (math.inf, 10)
    # Only the 10 slow runs ended in between: every percentile is in their bucket.
    assert agents.quantile(0.5, runs) == pytest.approx(1.0 + 1.5 * 0.5)


def test_window_after_a_reset_is_none() -> None:
    assert agents.window(entry([0.2] * 5), entry([0.2] * 2)) is None


def test_rates_between_two_points() -> None:
    before = entry([0.2] * 10, {"calls": 10, "prompt_tokens": 1000, "completion_tokens": 200})
    after = entry(
        [0.2] * 30,
        {"calls": 30, "prompt_tokens": 4000, "completion_tokens": 600, "cost_usd": 0.5},
    )
    rates = agents.rates(before, after, 4.0)
    assert rates == agents.Rates(5.0, 750.0, 100.0, 0.125)


def test_rates_of_a_new_type_count_from_zero() -> None:
    rates = agents.rates(None, entry([0.2] * 8), 2.0)
    assert rates is not None and rates.runs_per_s == 4.0


def test_rates_after_a_reset_or_without_time_are_none() -> None:
    assert agents.rates(entry([0.2] * 8), entry([0.2] * 2), 2.0) is None
    assert agents.rates(None, entry([0.2] * 8), 0.0) is None


def test_mean_between_two_points() -> None:
    assert agents.mean_s(entry([1.0] * 2), entry([1.0] * 2 + [3.0] * 2)) == pytest.approx(3.0)


def test_type_entries_keep_usage_and_counts() -> None:
    e = entry(
        [0.2, 0.3], {"calls": 2, "prompt_tokens": 10, "completion_tokens": 5, "cost_usd": 0.01}
    )
    assert e["b"][-1] == 2 and e["s"] == pytest.approx(0.5)
    assert e["u"] == [2, 10, 5, 0.01]
