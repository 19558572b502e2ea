"""What publish's ``delay_s`` / ``at`` and a schedule's declaration accept, checked before
anything is written: a bad one is a clear error."""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta

import pytest

from workers.core.errors import InvalidDelay, InvalidSchedule
from workers.timers import NOW, Schedules, due_time, from_settings, make


def test_due_time_delay_in_ms_rounded_up() -> None:
    assert due_time(delay_s=2.0001).delay_ms == 2001


def test_due_time_zero_delay_is_now() -> None:
    assert due_time(delay_s=0) is NOW


def test_due_time_past_at_is_now() -> None:
    assert due_time(at=datetime.now(UTC) - timedelta(seconds=5)) is NOW
    assert due_time(at=time.time() - 5) is NOW


def test_due_time_future_at_in_epoch_ms() -> None:
    when = datetime.now(UTC) + timedelta(hours=1)
    assert abs(due_time(at=when).at_ms - when.timestamp() * 1000) <= 1


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"delay_s": -1}, "delay_s must be >= 0"),
        ({"delay_s": float("nan")}, "must be finite"),
        ({"delay_s": "3"}, "must be a number of seconds"),
        ({"delay_s": True}, "must be a number of seconds"),
        ({"at": datetime(2030, 1, 1)}, "timezone-aware"),
        ({"delay_s": 1, "at": time.time() + 60}, "not both"),
    ],
)
def test_due_time_bad_input_is_refused(kwargs: dict[str, object], message: str) -> None:
    with pytest.raises(InvalidDelay, match=message):
        due_time(**kwargs)  # type: ignore[arg-type]


def test_schedule_default_name_and_ticks() -> None:
    one = make("*/5 * * * *", type="demo.echo", data={"n": 1})
    assert one.name == "demo.echo */5 * * * *"
    tick = one.last_tick_ms(int(datetime(2026, 12, 6, 10, 7, tzinfo=UTC).timestamp() * 1000))
    assert one.event_id(tick) == "demo.echo */5 * * * *@2026-12-06T10:05:00Z"


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"cron": "* * *", "type": "demo.echo"}, "expected 5 fields"),
        ({"cron": "* * * * *", "type": ""}, "type must be an event type"),
        ({"cron": "* * * * *", "type": "demo.echo", "grace_s": 0}, "grace_s must be > 0"),
        ({"cron": "* * * * *", "type": "demo.echo", "timezone": "Mars/Olympus"}, "time zone"),
        ({"cron": "* * * * *", "type": "demo.echo", "data": [1]}, "data must be a mapping"),
    ],
)
def test_schedule_bad_declaration_is_refused(kwargs: dict[str, object], message: str) -> None:
    cron = kwargs.pop("cron")
    with pytest.raises(InvalidSchedule, match=message):
        make(cron, **kwargs)  # type: ignore[arg-type]


def test_schedules_same_name_twice_must_be_the_same() -> None:
    every = Schedules()
    every.add(make("* * * * *", type="a", name="x"))
    every.add(make("* * * * *", type="a", name="x"))  # a module imported twice
    with pytest.raises(InvalidSchedule, match="two different schedules are named 'x'"):
        every.add(make("*/2 * * * *", type="a", name="x"))


def test_schedules_from_settings_json() -> None:
    found = from_settings('[{"cron": "0 * * * *", "type": "demo.echo", "data": {"n": 2}}]')
    assert [(s.name, dict(s.data)) for s in found] == [("demo.echo 0 * * * *", {"n": 2})]
    assert from_settings("") == []


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ("{not json", "not JSON"),
        ('{"cron": "* * * * *"}', "must be a list"),
        ('[{"type": "demo.echo"}]', r"STREAMDESK_SCHEDULES\[0\] must be an object with cron"),
        ('[{"cron": "* * * * *", "type": "a", "colour": "red"}]', "colour"),
    ],
)
def test_schedules_from_settings_bad_input(raw: str, message: str) -> None:
    with pytest.raises(InvalidSchedule, match=message):
        from_settings(raw)
