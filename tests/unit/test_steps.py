from __future__ import annotations

from datetime import UTC, datetime

import pytest

from workers.core.steps import MAX_DETAIL_CHARS, clip, summary
from workers.store.timeline_rows import published_step


def test_clip_keeps_short_text_unchanged() -> None:
    assert clip("boom") == "boom"


def test_clip_keeps_both_ends_of_long_text() -> None:
    text = "head" + "." * 5000 + "tail"
    clipped = clip(text)
    assert len(clipped) <= MAX_DETAIL_CHARS
    assert clipped.startswith("head") and clipped.endswith("tail") and "\n...\n" in clipped


def test_summary_is_the_last_line_of_a_traceback() -> None:
    text = 'Traceback (most recent call last):\n  File "x.py"\nValueError: bad\n\n'
    assert summary(text) == "ValueError: bad"


def test_summary_of_a_huge_line_is_bounded() -> None:
    assert len(summary("x" * 10_000)) == 300


def test_published_step_is_the_entry_ids_time() -> None:
    step = published_step("s", "1700000000123-4")
    assert step.at == datetime(2023, 11, 14, 22, 13, 20, 123000, tzinfo=UTC)
    assert (step.kind, step.stream, step.entry_id, step.attempt) == (
        "published",
        "s",
        "1700000000123-4",
        0,
    )


@pytest.mark.parametrize("entry_id", ["", "abc-0", "12-x", "-1"])
def test_published_step_refuses_what_is_not_an_entry_id(entry_id: str) -> None:
    with pytest.raises(ValueError, match="not a stream entry id"):
        published_step("s", entry_id)
