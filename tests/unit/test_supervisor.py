"""The back-off ``manage.py up`` waits before restarting a child that died."""

from __future__ import annotations

import pytest

from workers.engine.supervisor import (
    MAX_BACKOFF_S,
    MIN_BACKOFF_S,
    STABLE_AFTER_S,
    describe_exit,
    next_backoff_s,
)


def test_backoff_first_death_waits_the_minimum() -> None:
    assert next_backoff_s(0.0, uptime_s=0.1) == MIN_BACKOFF_S


def test_backoff_doubles_while_the_child_keeps_dying_young() -> None:
    waits = [MIN_BACKOFF_S]
    for _ in range(7):
        waits.append(next_backoff_s(waits[-1], uptime_s=2.0))
    assert waits == [1, 2, 4, 8, 16, 30, 30, 30]
    assert max(waits) == MAX_BACKOFF_S


def test_backoff_starts_over_after_a_stable_run() -> None:
    assert next_backoff_s(MAX_BACKOFF_S, uptime_s=STABLE_AFTER_S) == MIN_BACKOFF_S


@pytest.mark.parametrize(
    ("code", "text"),
    [(-9, "killed by SIGKILL"), (1, "exited with code 1"), (0, "exited with code 0")],
)
def test_describe_exit_names_the_signal(code: int, text: str) -> None:
    assert describe_exit(code) == text
