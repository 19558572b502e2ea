"""Waiting for a condition, for every test tier: polls until it holds or fails the test."""

from __future__ import annotations

import time
from collections.abc import Callable

POLL_S = 0.02


def wait_for(
    condition: Callable[[], bool], timeout_s: float = 30, what: str = "condition"
) -> float:
    """Seconds it took for ``condition`` to hold; fails the test after ``timeout_s``."""
    start = time.monotonic()
    while time.monotonic() - start < timeout_s:
        if condition():
            return time.monotonic() - start
        time.sleep(POLL_S)
    raise AssertionError(f"timed out after {timeout_s} s waiting for {what}")
