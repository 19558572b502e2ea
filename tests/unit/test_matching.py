"""What a wait may match on (workers/core/matching.py): fields checked with errors that say
the form, and the digest an event finds its waits by, the same from both sides."""

from __future__ import annotations

from typing import Any

import pytest

from workers.core.errors import StepError
from workers.core.events import Envelope
from workers.core.matching import check_match, digest, event_digests, shape_of


@pytest.mark.parametrize(
    ("match", "says"),
    [
        ({"order_id": 1}, "use 'subject' or 'data.<path>'"),
        ({"data.": 1}, "use 'subject' or 'data.<path>'"),
        ({"data.a..b": 1}, "use 'subject' or 'data.<path>'"),
        ({"source": "x"}, "use 'subject' or 'data.<path>'"),
        ({"data.x": object()}, "not JSON"),
        ({f"data.f{n}": n for n in range(9)}, "at most 8 fields"),
        (["subject"], "must be a dict"),
    ],
)
def test_a_bad_match_is_refused_with_the_form(match: Any, says: str) -> None:
    with pytest.raises(StepError) as refused:
        check_match(match)
    assert says in str(refused.value)


def test_an_event_finds_the_digest_its_wait_was_filed_under() -> None:
    match = {"subject": "o-1", "data.refund.id": "r9"}
    event = Envelope(type="t", subject="o-1", data={"refund": {"id": "r9"}, "other": 1})
    assert event_digests(event, [shape_of(match)]) == [digest("t", match)]
    assert shape_of(match) == "data.refund.id subject"


def test_an_event_lacking_a_field_or_with_another_value_finds_nothing() -> None:
    match = {"data.order_id": 42}
    shape = shape_of(match)
    assert event_digests(Envelope(type="t", data={}), [shape]) == []
    assert event_digests(Envelope(type="t", data={"order_id": "42"}), [shape]) != [
        digest("t", match)
    ]
    assert event_digests(Envelope(type="u", data={"order_id": 42}), [shape]) != [digest("t", match)]


def test_an_empty_match_takes_any_event_of_the_type() -> None:
    assert check_match(None) == {} and shape_of({}) == ""
    assert event_digests(Envelope(type="t", data={"x": 1}), [""]) == [digest("t", {})]
