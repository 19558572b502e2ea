"""Retry policy as data: given a delivery count, what happens next. Pure."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


class Verdict(StrEnum):
    RETRY = "retry"
    DEAD = "dead"


@dataclass(frozen=True, slots=True)
class Decision:
    verdict: Verdict
    # How long the entry should look idle before another worker may reclaim it.
    retry_in_ms: int = 0
    # Why a dead one is dead-lettered: the dead letter's and the timeline's ``reason``.
    reason: str = "max-deliveries"


# The database refused to store the outcome (DataError, a CHECK, a value no adapter takes):
# a retry would be refused the same way.
UNSTORABLE = Decision(Verdict.DEAD, reason="unstorable")


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    max_deliveries: int = 5
    base_ms: int = 1_000
    # A retry never waits longer than the reclaim idle time: XAUTOCLAIM cannot wait longer.
    cap_ms: int = 60_000

    def backoff_ms(self, deliveries: int) -> int:
        """Exponential in the delivery count: base, 2*base, 4*base, ... up to the cap."""
        exponent = max(deliveries - 1, 0)
        return min(self.cap_ms, self.base_ms * int(2 ** min(exponent, 30)))

    def after_failure(self, deliveries: int) -> Decision:
        if deliveries >= self.max_deliveries:
            return Decision(Verdict.DEAD)
        return Decision(Verdict.RETRY, self.backoff_ms(deliveries))

    def exhausted(self, deliveries: int) -> bool:
        """True for an entry delivered more often than allowed (its workers kept dying)."""
        return deliveries > self.max_deliveries
