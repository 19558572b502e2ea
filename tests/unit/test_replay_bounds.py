"""A replay's bounds (workers/replay/bounds.py): entry ids or ISO times, both ends in."""

from __future__ import annotations

import pytest

from workers.core.errors import InvalidAction
from workers.replay.bounds import MAX_SEQ, check_order, parse_bound


@pytest.mark.parametrize(
    ("text", "end", "expected"),
    [
        ("", False, "-"),
        (None, True, "+"),
        ("1765000000000-7", False, "1765000000000-7"),
        ("1765000000000-07", True, "1765000000000-7"),
        ("1765000000000", False, "1765000000000-0"),
        ("1765000000000", True, f"1765000000000-{MAX_SEQ}"),
        ("2026-12-01", False, "1796083200000-0"),
        ("2026-12-01T01:00:00+01:00", True, f"1796083200000-{MAX_SEQ}"),
        (" 2026-12-01T00:00:00.250Z ", False, "1796083200250-0"),
    ],
)
def test_parse_bound_reads_ids_and_times(text: str | None, end: bool, expected: str) -> None:
    assert parse_bound(text, "from", end) == expected


@pytest.mark.parametrize("text", ["yesterday", "12-x", "-5", "1-2-3", "1969-12-31T23:59:59Z"])
def test_parse_bound_names_its_field_for_what_it_cannot_read(text: str) -> None:
    with pytest.raises(InvalidAction) as caught:
        parse_bound(text, "to", end=True)
    assert caught.value.field == "to"


def test_check_order_refuses_a_range_that_ends_before_it_starts() -> None:
    check_order("10-0", "10-0")
    check_order("-", "5-0")
    check_order("9-0", "10-0")  # stream order, not string order
    with pytest.raises(InvalidAction, match="starts"):
        check_order("10-1", "10-0")
