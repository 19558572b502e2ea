"""Times for people: UTC clock time, the date when not today, the age, the full ISO in a title."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from django.template import Context, Template

from console.templatetags.streamdesk import age, pause_note, when, when_precise
from workers.operations.actions import Pause, parse_pause

NOW = datetime(2026, 12, 3, 11, 26, 5, tzinfo=UTC)
NOW_MS = int(NOW.timestamp() * 1000)
PAUSED_AT = datetime(2026, 12, 3, 11, 23, 4, 962794, tzinfo=UTC)


def test_when_today_shows_clock_and_age_with_iso_title() -> None:
    assert str(when(PAUSED_AT, NOW_MS)) == (
        '<time datetime="2026-12-03T11:23:04.962794+00:00" '
        'title="2026-12-03T11:23:04.962794+00:00">11:23:04 UTC (3 min ago)</time>'
    )


def test_when_another_day_adds_the_date() -> None:
    text = str(when(NOW - timedelta(days=1, hours=2), NOW_MS))
    assert ">2026-12-02 09:26:05 UTC (1 d 2 h ago)</time>" in text


@pytest.mark.parametrize(
    "value",
    [PAUSED_AT, "2026-12-03T11:23:04.962794+00:00", int(PAUSED_AT.timestamp() * 1000)],
)
def test_when_reads_datetimes_iso_strings_and_milliseconds(value: object) -> None:
    assert ">11:23:04 UTC (3 min ago)</time>" in str(when(value, NOW_MS))


def test_when_converts_other_zones_to_utc() -> None:
    local = datetime.fromisoformat("2026-12-03T12:23:04+01:00")
    assert ">11:23:04 UTC (3 min ago)</time>" in str(when(local, NOW_MS))


def test_when_precise_keeps_milliseconds() -> None:
    assert ">11:23:04.962 UTC (3 min ago)</time>" in str(when_precise(PAUSED_AT, NOW_MS))


def test_when_without_a_time_shows_a_dash_or_the_value() -> None:
    assert when(None) == "—"
    assert when(0) == "—"
    assert when("not a time") == "not a time"


def test_when_escapes_what_it_shows() -> None:
    template = Template("{% load streamdesk %}{{ value|when }}")
    assert template.render(Context({"value": "<b>"})) == "&lt;b&gt;"


@pytest.mark.parametrize(
    ("seconds", "text"),
    [
        (0.4, "just now"),
        (12, "12 s ago"),
        (180, "3 min ago"),
        (3 * 3600 + 120, "3 h 2 min ago"),
        (2 * 86400 + 3600, "2 d 1 h ago"),
        (-30, "in 30 s"),
    ],
)
def test_age_in_the_largest_short_unit(seconds: float, text: str) -> None:
    assert age(seconds) == text


def test_parse_pause_splits_who_and_when() -> None:
    assert parse_pause("admin at 2026-12-03T11:23:04.962794+00:00") == Pause("admin", PAUSED_AT)


def test_parse_pause_keeps_a_name_with_at_in_it() -> None:
    parsed = parse_pause("ops at night at 2026-12-03T11:23:04.962794+00:00")
    assert parsed == Pause("ops at night", PAUSED_AT)


def test_parse_pause_shows_a_hand_written_value_as_it_is() -> None:
    assert parse_pause("maintenance window") == Pause("maintenance window", None)
    assert parse_pause("bob at noon") == Pause("bob at noon", None)


def test_pause_note_of_no_pause_is_none() -> None:
    assert pause_note(None) is None
    assert pause_note("carol at 2026-12-03T11:23:04+00:00") == Pause(
        "carol", datetime(2026, 12, 3, 11, 23, 4, tzinfo=UTC)
    )
