"""The growing-stream warning: only a stream that grew over the window and that nothing
trims; never a busy stream its retention holds (a red alarm that is not trouble is a bug)."""

from __future__ import annotations

from console.live.stream_growth import GROWTH_WINDOW_MS, growth_warnings
from workers.monitor.history import Point
from workers.monitor.records import StreamInfo
from workers.retention import Retention, TrimRecord

NOW_MS = 1_800_000_000_000
MIN_MS = 60_000
WEEK = Retention(7 * 86_400)
OFF = Retention(0)


def points(*lengths: int, step_ms: int = MIN_MS, stream: str = "s") -> list[Point]:
    """One point a step, the last one now."""
    start = NOW_MS - step_ms * (len(lengths) - 1)
    return [{"t": start + i * step_ms, "s": {stream: {"n": n}}} for i, n in enumerate(lengths)]


def stream(oldest_age_ms: int, trim: TrimRecord | None = None, length: int = 2_900) -> StreamInfo:
    return StreamInfo(
        name="s",
        exists=True,
        length=length,
        entries_added=length,
        last_id=f"{NOW_MS}-0",
        dead_letters=0,
        counters={},
        first_id=f"{NOW_MS - oldest_age_ms}-0",
        trim=trim,
    )


def trimmed(ago_ms: int, retention: Retention = WEEK, held_by: str = "") -> TrimRecord:
    return TrimRecord(NOW_MS - ago_ms, "w-1", retention, 0, 0, "", held_by, "")


GROWING = points(*range(842, 842 + 16 * 130, 130))  # 842 to 2,792 over 15 minutes


def test_a_stream_with_retention_off_that_grows_is_warned_about() -> None:
    (found,) = growth_warnings([stream(17 * MIN_MS)], GROWING, OFF, NOW_MS)
    assert (found.stream, found.from_length, found.to_length) == ("s", 842, 2_792)
    assert found.over_ms == 15 * MIN_MS
    assert "retention is off" in found.why


def test_the_workers_setting_wins_over_the_consoles() -> None:
    """The last trim records the settings the workers trim with."""
    record = trimmed(30_000, retention=OFF)
    assert growth_warnings([stream(MIN_MS, record)], GROWING, WEEK, NOW_MS)


def test_a_busy_stream_within_its_retention_is_fine() -> None:
    assert growth_warnings([stream(3 * 86_400_000)], GROWING, WEEK, NOW_MS) == []


def test_a_stream_trimmed_a_minute_ago_is_fine_past_its_retention() -> None:
    """XTRIM ~ removes whole nodes: the oldest entry may outlive the retention a while."""
    old = stream(8 * 86_400_000, trimmed(50_000))
    assert growth_warnings([old], GROWING, WEEK, NOW_MS) == []


def test_a_stream_past_its_retention_that_no_one_trims_is_warned_about() -> None:
    (never,) = growth_warnings([stream(8 * 86_400_000)], GROWING, WEEK, NOW_MS)
    assert "no worker has trimmed it" in never.why and "8 d 0 h old" in never.why
    (stale,) = growth_warnings(
        [stream(8 * 86_400_000, trimmed(20 * MIN_MS))], GROWING, WEEK, NOW_MS
    )
    assert "its last trim was 20 min 0 s ago" in stale.why


def test_a_trim_held_back_by_a_group_is_warned_about() -> None:
    held = stream(8 * 86_400_000, trimmed(30_000, held_by="reports"))
    (found,) = growth_warnings([held], GROWING, WEEK, NOW_MS)
    assert "group reports holds the trim back" in found.why


def test_over_its_length_cap_counts_as_past_its_retention() -> None:
    capped = Retention(0, max_len=1_000)
    (found,) = growth_warnings([stream(MIN_MS)], GROWING, capped, NOW_MS)
    assert "over the cap of 1,000" in found.why


def test_a_length_that_went_down_is_being_trimmed() -> None:
    sawtooth = points(900, 1_000, 1_100, 950, 1_050, *range(1_100, 2_200, 100))
    assert growth_warnings([stream(17 * MIN_MS)], sawtooth, OFF, NOW_MS) == []


def test_a_level_stream_does_not_grow() -> None:
    assert growth_warnings([stream(17 * MIN_MS)], points(*[500] * 16), OFF, NOW_MS) == []


def test_history_shorter_than_the_window_is_no_growth_yet() -> None:
    short = points(842, 1_000, 1_200, 1_400)  # 3 minutes recorded
    assert growth_warnings([stream(17 * MIN_MS)], short, OFF, NOW_MS) == []


def test_the_window_is_a_setting() -> None:
    fast = points(*range(10, 30), step_ms=1_000)
    assert growth_warnings([stream(60_000)], fast, OFF, NOW_MS, window_ms=15_000)
    assert GROWTH_WINDOW_MS == 15 * MIN_MS
