"""A failure repeated per event is one line per failure class and window, never dropped."""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator

import pytest

from workers.core.logs import RepeatFilter, failure_class, flush_repeats

FAILED = "agent failed (%s); retry in %d ms"


class Lines(logging.Handler):
    """The messages a handler with the filter lets through, in order."""

    def __init__(self, repeats: RepeatFilter) -> None:
        super().__init__()
        self.addFilter(repeats)
        self.lines: list[str] = []
        self.summary = threading.Event()

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(record.getMessage())
        if getattr(record, "repeats", None):
            self.summary.set()


@pytest.fixture
def log() -> Iterator[tuple[logging.Logger, RepeatFilter, Lines]]:
    repeats = RepeatFilter(window_s=60)
    lines = Lines(repeats)
    logger = logging.getLogger("streamdesk.test-repeats")
    logger.propagate = False
    logger.setLevel(logging.INFO)
    logger.addHandler(lines)
    try:
        yield logger, repeats, lines
    finally:
        logger.removeHandler(lines)
        repeats.flush()


def test_repeat_filter_logs_the_first_failure_in_full_and_counts_the_rest(
    log: tuple[logging.Logger, RepeatFilter, Lines],
) -> None:
    logger, repeats, lines = log
    for n in range(58):
        logger.warning(
            FAILED, f"workers.examples.demo.agents.DemoFailure: demo failure #{n}", 1000 * (n % 4)
        )

    assert lines.lines == [
        "agent failed (workers.examples.demo.agents.DemoFailure: demo failure #0); retry in 0 ms"
    ]
    repeats.flush()
    assert lines.lines[1].startswith(
        "agent failed: workers.examples.demo.agents.DemoFailure (x57 more in the last"
    )


def test_repeat_filter_keeps_one_line_per_failure_class(
    log: tuple[logging.Logger, RepeatFilter, Lines],
) -> None:
    logger, repeats, lines = log
    for n in range(3):
        logger.warning(FAILED, f"KeyError: 'order-{n}'", 1000)
        logger.warning(FAILED, f"builtins.TimeoutError: call {n} took too long", 1000)

    assert lines.lines == [
        "agent failed (KeyError: 'order-0'); retry in 1000 ms",
        "agent failed (builtins.TimeoutError: call 0 took too long); retry in 1000 ms",
    ]
    repeats.flush()
    assert set(lines.lines[2:]) == {
        "agent failed: KeyError (x2 more in the last 0 s)",
        "agent failed: builtins.TimeoutError (x2 more in the last 0 s)",
    }


def test_repeat_filter_reports_when_the_window_ends_by_itself() -> None:
    repeats = RepeatFilter(window_s=0.2)
    lines = Lines(repeats)
    logger = logging.getLogger("streamdesk.test-repeats-timer")
    logger.propagate = False
    logger.addHandler(lines)
    try:
        for n in range(5):
            logger.error("dead-lettering %s: %s", f"{n}-0", "no agent", extra={"reason": "unknown"})
        assert lines.summary.wait(timeout=5), lines.lines
        assert lines.lines == [
            "dead-lettering 0-0: no agent",
            "dead-lettering: unknown (x4 more in the last 0 s)",
        ]
        # A new window: the next one is logged in full again.
        logger.error("dead-lettering %s: %s", "9-0", "no agent", extra={"reason": "unknown"})
        assert lines.lines[-1] == "dead-lettering 9-0: no agent"
    finally:
        logger.removeHandler(lines)
        repeats.flush()


def test_repeat_filter_lets_info_and_distinct_lines_through(
    log: tuple[logging.Logger, RepeatFilter, Lines],
) -> None:
    logger, _, lines = log
    for n in range(3):
        logger.info("deferred: %s; rerun in %d ms", "budget github", 100)
        logger.warning("lease lost for %s: its result will be refused", f"w1/{n}-0#2")
        logger.warning("no group on %s", "streamdesk:events" if n else "orders:eu")

    assert len(lines.lines) == 3 + 3 + 2  # the stream names are not failure classes


@pytest.mark.parametrize(
    ("args", "reason", "expected"),
    [
        (
            ("workers.examples.demo.agents.DemoFailure: demo failure #3", 1000),
            None,
            "workers.examples.demo.agents.DemoFailure",
        ),
        (("ValueError",), None, "ValueError"),
        (("streamdesk:events",), None, "x streamdesk:events"),
        (("1700000000000-0", "cannot decode"), "undecodable", "undecodable"),
    ],
)
def test_failure_class_names_the_exception_class(
    args: tuple[object, ...], reason: str | None, expected: str
) -> None:
    record = logging.LogRecord("x", logging.WARNING, "", 0, "x %s", args, None)
    if reason:
        record.reason = reason
    assert failure_class(record) == expected


def test_flush_repeats_reports_the_counts_of_every_filter_alive(
    log: tuple[logging.Logger, RepeatFilter, Lines],
) -> None:
    # A stopping worker holds no reference to the filters logging.config built from LOGGING.
    logger, _, lines = log
    for n in range(3):
        logger.warning(FAILED, f"KeyError: {n}", 0)
    flush_repeats()
    assert lines.lines[1] == "agent failed: KeyError (x2 more in the last 0 s)"


def test_repeat_filter_summary_of_a_template_of_placeholders_says_the_first_line(
    log: tuple[logging.Logger, RepeatFilter, Lines],
) -> None:
    """django.request logs "%s: %s" (reason, path): its summary says the words, not "%s"."""
    logger, repeats, lines = log
    for _ in range(3):
        logger.warning("%s: %s", "Not Found", "/missing")
    repeats.flush()
    assert lines.lines == ["Not Found: /missing", "Not Found: /missing (x2 more in the last 0 s)"]
