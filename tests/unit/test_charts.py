"""The charts' lines and the rates' baseline, from recorded points: no server needed."""

from __future__ import annotations

from typing import Any

from console.live import charts, overview, realtime
from workers.monitor.history import MINUTE, SECOND, TEN_SECONDS, Point

STREAM = "s"


def point(t_ms: int, added: int = 0, processed: int = 0, failed: int = 0, **kw: Any) -> Point:
    """A recorded point of stream "s" with group "g": [lag, pending, read]."""
    g = kw.get("g", [0, 0, processed])
    return {
        "t": t_ms,
        "s": {
            STREAM: {
                "n": 0,
                "a": added,
                "p": processed,
                "f": failed,
                "d": 0,
                "h": kw.get("hits", 0),
                "r": 0,
                "g": {"g": g},
            }
        },
    }


def throughput(points: list[Point], step_ms: int = 1_000, first: int = 0) -> realtime.Columns:
    chart = charts.stream_charts(STREAM, ["g"])[0]
    return charts.columns(points, step_ms, len(chart.labels), chart.values, first)


def test_rates_use_the_points_timestamps_not_the_tick() -> None:
    # Ticks 1.0 s and then 1.8 s apart (a slow tick): the rate is over the real interval.
    points = [point(0, 0, 0), point(1_000, 10, 10), point(2_800, 28, 28)]
    xs, added, processed, failed = throughput(points)
    assert xs == [0.0, 1.0, 2.8]
    assert added == [None, 10.0, 10.0]
    assert processed == [None, 10.0, 10.0]
    assert failed == [None, 0.0, 0.0]


def test_gap_longer_than_two_steps_is_a_null_row_and_no_rate() -> None:
    # The recorder stopped for 10 s: a null row one step after the last point breaks the
    # line, and the first point after the gap has no rate (no average across the gap).
    points = [point(0, 0, 0), point(1_000, 5, 5), point(11_000, 100, 100), point(12_000, 104, 104)]
    xs, added, _, _ = throughput(points)
    assert xs == [0.0, 1.0, 2.0, 11.0, 12.0]
    assert added == [None, 5.0, None, None, 4.0]


def test_one_missed_bucket_is_not_a_gap() -> None:
    xs, added, _, _ = throughput([point(0, 0), point(2_000, 10)])
    assert xs == [0.0, 2.0] and added == [None, 5.0]


def test_gap_rule_follows_the_resolution() -> None:
    points = [point(0, 0), point(20_000, 200), point(50_000, 500)]
    xs, added, _, _ = throughput(points, TEN_SECONDS.step_ms)
    assert xs == [0.0, 20.0, 30.0, 50.0]
    assert added == [None, 10.0, None, None]


def test_counter_reset_is_no_rate() -> None:
    _, _, processed, _ = throughput([point(0, processed=500), point(1_000, processed=3)])
    assert processed == [None, None]


def test_a_stream_missing_from_a_point_is_null() -> None:
    missing: Point = {"t": 1_000, "s": {}}
    _, added, _, _ = throughput([point(0), missing, point(2_000, 4)])
    assert added == [None, None, None]


def test_tail_rows_use_the_point_before_them() -> None:
    points = [point(t * 1_000, 3 * t) for t in range(5)]
    xs, added, _, _ = throughput(points, first=3)
    assert xs == [3.0, 4.0] and added == [3.0, 3.0]


def test_backlog_lines_are_gauges_and_unknown_lag_is_null() -> None:
    backlog = charts.stream_charts(STREAM, ["g"])[1]
    points = [point(0, g=[7, 2, 0]), point(1_000, g=[None, 3, 0])]
    assert charts.columns(points, 1_000, 2, backlog.values) == [
        [0.0, 1.0],
        [7.0, None],
        [2.0, 3.0],
    ]


def test_hit_ratio_in_percent() -> None:
    hits = charts.stream_charts(STREAM, ["g"])[2]
    points = [point(0), point(1_000, processed=3, hits=1), point(2_000, processed=3, hits=1)]
    assert charts.columns(points, 1_000, 1, hits.values)[1] == [None, 25.0, None]


def test_group_acked_is_read_minus_still_pending() -> None:
    acked = charts.group_charts(STREAM, "g")[1]
    points = [point(0, g=[50, 0, 0]), point(2_000, g=[30, 4, 20])]
    assert charts.columns(points, 1_000, 1, acked.values)[1] == [None, 8.0]


def test_data_has_every_range_from_its_resolution() -> None:
    chart = charts.stream_charts(STREAM, ["g"])[0]
    history = {
        SECOND.name: [point(t * 1_000, t) for t in range(20)],
        TEN_SECONDS.name: [point(t * 10_000, t) for t in range(3)],
        MINUTE.name: [],
    }
    full = charts.data(chart, history, tail=False)
    assert full["full"] and full["unit"] == "events/s"
    assert len(full["ranges"]["5m"][0]) == 20
    assert len(full["ranges"]["1h"][0]) == 3
    assert full["ranges"]["24h"] == [[], [], [], []]
    tail = charts.data(chart, history, tail=True)
    assert len(tail["ranges"]["5m"][0]) == charts.TAIL_ROWS["5m"]
    assert tail["ranges"]["5m"][1][0] == 1.0  # the first tail row has its rate


def test_series_by_page_part() -> None:
    history = {SECOND.name: [point(0), point(1_000, 2)]}
    charts_by_part = {
        realtime.overview_key(): charts.stream_charts(STREAM, ["g"]),
        realtime.stream_key(STREAM): charts.stream_charts(STREAM, ["g"]),
    }
    out = charts.series(charts_by_part, history, tail=True)
    keys = charts.stream_chart_keys(STREAM)
    assert list(out[realtime.overview_key()]) == keys
    assert list(out[realtime.stream_key(STREAM)]) == keys


def test_baseline_is_the_newest_point_at_least_the_window_old() -> None:
    points = [point(t) for t in (0, 2_000, 4_000, 6_000, 8_000, 9_500)]
    assert overview.baseline(points, 10_000) == points[2]  # 6 s old


def test_baseline_right_after_a_restart_reads_the_recorded_history() -> None:
    # A console that just started has the recorder's points: a baseline on its first tick.
    recorded = [point(t * 1_000) for t in range(100)]
    assert overview.baseline(recorded, 100_000) == recorded[95]


def test_baseline_of_a_recorder_just_started_is_its_oldest_point() -> None:
    points = [point(0), point(1_000), point(2_000)]
    assert overview.baseline(points, 2_500) == points[0]


def test_baseline_never_across_an_outage_nor_over_a_fraction_of_a_second() -> None:
    assert overview.baseline([point(0)], 60_000) is None  # the recorder was down a minute
    assert overview.baseline([point(0)], 500) is None
    assert overview.baseline([], 500) is None
