"""The cron parser: the five fields, their forms, the ticks around a moment, and bad input
refused with a message that names the field."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from workers.core.errors import InvalidSchedule
from workers.timers.cron import parse


def at(text: str) -> float:
    return datetime.fromisoformat(text).replace(tzinfo=UTC).timestamp()


def iso(epoch_s: float, zone: str = "UTC") -> str:
    return datetime.fromtimestamp(epoch_s, UTC).strftime("%Y-%m-%d %H:%M")


def test_cron_every_five_minutes_next_and_last() -> None:
    cron = parse("*/5 * * * *")
    assert iso(cron.next_after(at("2026-12-06 10:02:30"))) == "2026-12-06 10:05"
    assert iso(cron.last_at_or_before(at("2026-12-06 10:02:30"))) == "2026-12-06 10:00"


def test_cron_next_is_strictly_after_a_tick() -> None:
    cron = parse("*/5 * * * *")
    assert iso(cron.next_after(at("2026-12-06 10:05:00"))) == "2026-12-06 10:10"
    assert iso(cron.last_at_or_before(at("2026-12-06 10:05:00"))) == "2026-12-06 10:05"


def test_cron_ranges_steps_and_lists() -> None:
    cron = parse("0,30 9-17/4 * * *")
    assert cron.minutes == {0, 30}
    assert cron.hours == {9, 13, 17}


def test_cron_start_with_step_runs_to_the_end() -> None:
    assert parse("50/5 * * * *").minutes == {50, 55}


def test_cron_names_any_case() -> None:
    cron = parse("0 9 * jan-Mar MON-fri")
    assert cron.months == {1, 2, 3}
    assert cron.weekdays == {1, 2, 3, 4, 5}


def test_cron_weekday_seven_is_sunday() -> None:
    assert parse("0 0 * * 7").weekdays == {0}


def test_cron_weekdays_skip_the_weekend() -> None:
    cron = parse("0 9 * * MON-FRI")
    # 2026-12-05 is a Saturday: the next tick is Monday's.
    assert iso(cron.next_after(at("2026-12-05 12:00:00"))) == "2026-12-07 09:00"
    assert iso(cron.last_at_or_before(at("2026-12-06 12:00:00"))) == "2026-12-04 09:00"


def test_cron_both_day_fields_restricted_match_either() -> None:
    cron = parse("0 0 1 * MON")  # the 1st of a month, and every Monday
    assert iso(cron.next_after(at("2026-12-02 00:00:00"))) == "2026-12-07 00:00"
    assert iso(cron.next_after(at("2026-12-28 00:00:00"))) == "2027-01-01 00:00"


def test_cron_month_end_and_leap_day() -> None:
    assert iso(parse("0 12 31 * *").next_after(at("2026-11-15 00:00:00"))) == "2026-12-31 12:00"
    assert iso(parse("0 0 29 2 *").next_after(at("2026-03-01 00:00:00"))) == "2028-02-29 00:00"


def test_cron_in_a_time_zone() -> None:
    cron = parse("0 9 * * *")
    # 09:00 in Paris is 08:00 UTC in winter.
    nxt = cron.next_after(at("2026-12-06 10:00:00"), "Europe/Paris")
    assert iso(nxt) == "2026-12-07 08:00"


@pytest.mark.parametrize(
    ("expression", "message"),
    [
        ("* * * *", "expected 5 fields"),
        ("* * * * * *", "expected 5 fields"),
        ("60 * * * *", "minute '60': 60 is out of range 0-59"),
        ("* 24 * * *", "hour '24': 24 is out of range 0-23"),
        ("* * 0 * *", "day of month '0': 0 is out of range 1-31"),
        ("* * * 13 *", "month '13'"),
        ("* * * * 8", "day of week '8'"),
        ("*/0 * * * *", "a step must be at least 1"),
        ("5-1 * * * *", "range 5-1 runs backwards"),
        ("x * * * *", "'x' is not a number"),
        ("* * * FOO *", "'FOO' is not a number or a name (JAN..DEC)"),
        ("1,,2 * * * *", "'' is not a number"),
        ("0 0 30 2 *", "never fires"),
    ],
)
def test_cron_bad_input_says_what_is_wrong(expression: str, message: str) -> None:
    with pytest.raises(InvalidSchedule, match="cron") as raised:
        parse(expression)
    assert message in str(raised.value)


def test_cron_skipped_local_hour_fires_an_hour_later() -> None:
    cron = parse("30 2 * * *")
    # 2027-03-28: Paris goes from 02:00 to 03:00; 02:30 is read as +01:00, 03:30 CEST.
    assert iso(cron.next_after(at("2027-03-27 12:00:00"), "Europe/Paris")) == "2027-03-28 01:30"


def test_cron_repeated_local_hour_fires_once() -> None:
    cron = parse("30 2 * * *")
    # 2027-10-31: Paris repeats 02:00-03:00; the first 02:30 (CEST, 00:30 UTC) only.
    first = cron.next_after(at("2027-10-30 12:00:00"), "Europe/Paris")
    assert iso(first) == "2027-10-31 00:30"
    assert iso(cron.next_after(first, "Europe/Paris")) == "2027-11-01 01:30"
    assert cron.last_at_or_before(at("2027-10-31 01:45:00"), "Europe/Paris") == first
