"""console/reads/runs.py's page cursor: what it writes it reads back exactly, and text it did
not write is refused with a reason (a 400 on the page, never a 500)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from console.reads.runs import MAX_ID, BadCursor, Cursor

MOMENTS = st.datetimes(
    min_value=datetime(1970, 1, 1), max_value=datetime(9999, 12, 31), timezones=st.just(UTC)
)


@given(MOMENTS, st.integers(min_value=0, max_value=MAX_ID))
def test_cursor_round_trips(at: datetime, pk: int) -> None:
    assert Cursor.decode(Cursor(at, pk).encode()) == Cursor(at, pk)


def test_cursor_keeps_microseconds() -> None:
    at = datetime(2026, 12, 6, 15, 0, 0, 123_456, tzinfo=UTC)
    text = Cursor(at, 42).encode()
    assert text == f"{(at - datetime(1970, 1, 1, tzinfo=UTC)) // timedelta(microseconds=1)}.42"
    assert Cursor.decode(text).created_at == at


def test_cursor_orders_like_its_rows() -> None:
    at = datetime(2026, 12, 6, tzinfo=UTC)
    later = Cursor.decode(Cursor(at + timedelta(microseconds=1), 1).encode())
    assert (later.created_at, later.id) > (at, 2)


@pytest.mark.parametrize(
    "text",
    ["", "abc", "12", "12.", ".5", "-1.5", "1.-5", "1.2.3", "1e5.2", "١٢.٣", f"1.{MAX_ID + 1}"],
)
def test_cursor_refuses_what_it_did_not_write(text: str) -> None:
    with pytest.raises(BadCursor, match="is not a page cursor"):
        Cursor.decode(text)


def test_cursor_refuses_a_moment_past_the_year_9999() -> None:
    with pytest.raises(BadCursor, match="names no date"):
        Cursor.decode("999999999999999999.1")
