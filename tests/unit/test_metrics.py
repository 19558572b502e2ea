"""Rates and drain estimates from samples: no server needed (charts: test_charts.py)."""

from __future__ import annotations

from console.live import metrics
from workers.monitor.history import to_point
from workers.monitor.sample import ConsumerInfo, GroupInfo, Sample, StreamInfo

COUNTERS = {
    "processed": 0,
    "failed": 0,
    "dead_lettered": 0,
    "idempotency_hits": 0,
    "busy": 0,
    "fenced": 0,
    "deleted": 0,
    "reclaimed": 0,
}


def group(
    lag: int | None = 0,
    pending: int = 0,
    read: int | None = 0,
    idle_ms: int | None = None,
    live: bool = True,
) -> GroupInfo:
    consumers = [ConsumerInfo("w1", pending, 10, None, live)]
    return GroupInfo(
        "s",
        "g",
        consumers,
        pending,
        lag,
        read,
        "0-0",
        "1-0" if idle_ms is not None else None,
        idle_ms,
    )


def sample(at_ms: int, g: GroupInfo, added: int | None = 0, **counts: int) -> Sample:
    stream = StreamInfo("s", True, 10, added, "1-0", 0, {**COUNTERS, **counts}, [g])
    return Sample(at_ms, [stream], [])


def test_stream_rates_per_second() -> None:
    old = to_point(sample(0, group(), added=0, processed=0, idempotency_hits=0))
    new = to_point(sample(2000, group(), added=40, processed=30, idempotency_hits=10))
    rates = metrics.stream_rates(old, new, "s")
    assert (rates.added_s, rates.processed_s, rates.hits_s) == (20.0, 15.0, 5.0)
    assert rates.hit_ratio == 0.25
    assert rates.window_s == 2.0  # what the page says the ratio is over


def test_stream_rates_counter_reset_is_not_negative() -> None:
    old = to_point(sample(0, group(), processed=500))
    new = to_point(sample(1000, group(), processed=3))
    assert metrics.stream_rates(old, new, "s").processed_s == 0.0


def test_stream_rates_idle_hit_ratio_is_unknown() -> None:
    point = to_point(sample(0, group()))
    later = to_point(sample(1000, group()))
    assert metrics.stream_rates(point, later, "s").hit_ratio is None


def test_stream_rates_without_entries_added_is_unknown() -> None:
    old = to_point(sample(0, group(), added=None))
    new = to_point(sample(1000, group(), added=None))
    assert metrics.stream_rates(old, new, "s").added_s is None


def test_group_rates_ack_and_drain() -> None:
    old = to_point(sample(0, group(lag=100, pending=10, read=0)))
    now = group(lag=80, pending=10, read=20)
    rates = metrics.group_rates(old, to_point(sample(1000, now)), now)
    assert rates.ack_s == 20.0
    assert rates.drain_s == 4.5  # (80 + 10) / 20


def test_group_rates_stalled_drain_is_unknown() -> None:
    old = to_point(sample(0, group(lag=5, pending=3, read=10)))
    now = group(lag=5, pending=3, read=10)
    assert metrics.group_rates(old, to_point(sample(1000, now)), now).drain_s is None


def test_group_rates_empty_backlog_drains_now() -> None:
    old = to_point(sample(0, group(read=10)))
    now = group(read=10)
    assert metrics.group_rates(old, to_point(sample(1000, now)), now).drain_s == 0.0
