"""Retry policy as data: given a delivery count and how an attempt failed, what happens next.
Pure. ``Retry`` is what an agent declares (``@agent(..., retry=Retry(...))``); ``RetryPolicy``
is what the engine applies: the declaration over the worker's settings."""

from __future__ import annotations

import math
import random
from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum

from workers.core.errors import ConfigurationError


class Verdict(StrEnum):
    RETRY = "retry"
    DEAD = "dead"


# How an attempt failed, beyond "it raised": each dead-letters with its own reason.
TIMEOUT = "timeout"  # it ran past its timeout_s (the task was cancelled)
NON_RETRIABLE = "non-retriable"  # NonRetriable, or a type in the policy's non_retriable
# A Retry-After up to this long becomes a wait instead of a delivery (Retry.retry_after_max_s).
RETRY_AFTER_MAX_S = 600.0


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
class Retry:
    """An agent's own backoff, as Temporal's and Hatchet's users know it: the first retry
    after ``base_s``, doubling up to ``cap_s`` (None: the worker's ``STREAMDESK_RETRY_BASE_MS``
    and claim idle time); ``jitter`` (0 to 1) draws each wait from ``[wait*(1-jitter),
    wait]``, so a burst of failures does not come back at once; an exception of a type in
    ``non_retriable`` dead-letters the event at once; a Retry-After up to
    ``retry_after_max_s`` is waited out without spending a delivery."""

    base_s: float | None = None
    cap_s: float | None = None
    jitter: float = 0.0
    non_retriable: tuple[type[BaseException], ...] = ()
    retry_after_max_s: float = RETRY_AFTER_MAX_S

    def __post_init__(self) -> None:
        for name in ("base_s", "cap_s", "retry_after_max_s"):
            value = getattr(self, name)
            if value is not None and not (math.isfinite(value) and value >= 0):
                raise ConfigurationError(f"Retry.{name} must be a number >= 0, got {value!r}")
        if not 0 <= self.jitter <= 1:
            raise ConfigurationError(f"Retry.jitter must be within 0 and 1, got {self.jitter!r}")
        if not all(
            isinstance(t, type) and issubclass(t, BaseException) for t in self.non_retriable
        ):
            raise ConfigurationError("Retry.non_retriable must be a tuple of exception classes")


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    max_deliveries: int = 5
    base_ms: int = 1_000
    # A retry never waits longer than the reclaim idle time: XAUTOCLAIM cannot wait longer.
    cap_ms: int = 60_000
    jitter: float = 0.0
    non_retriable: tuple[type[BaseException], ...] = ()
    retry_after_max_ms: int = int(RETRY_AFTER_MAX_S * 1000)

    def backoff_ms(self, deliveries: int, draw: Callable[[], float] = random.random) -> int:
        """Exponential in the delivery count: base, 2*base, 4*base, ... up to the cap, less a
        random share of at most ``jitter`` of it."""
        exponent = max(deliveries - 1, 0)
        wait = min(self.cap_ms, self.base_ms * int(2 ** min(exponent, 30)))
        if self.jitter:
            wait -= int(wait * self.jitter * draw())
        return wait

    def after_failure(self, deliveries: int, kind: str = "") -> Decision:
        """``kind``: how the attempt failed (``TIMEOUT``, ``NON_RETRIABLE``; "" for raised)."""
        if kind == NON_RETRIABLE:
            return Decision(Verdict.DEAD, reason=NON_RETRIABLE)
        if deliveries >= self.max_deliveries:
            return Decision(Verdict.DEAD, reason=kind or "max-deliveries")
        return Decision(Verdict.RETRY, self.backoff_ms(deliveries))

    def exhausted(self, deliveries: int) -> bool:
        """True for an entry delivered more often than allowed (its workers kept dying)."""
        return deliveries > self.max_deliveries

    def declared(self, max_deliveries: int | None, retry: Retry | None) -> RetryPolicy:
        """This policy (the worker's settings) with an agent's declarations over it. The cap
        stays within this one's: XAUTOCLAIM cannot hold an entry longer than it idles."""
        if max_deliveries is None and retry is None:
            return self
        r = retry or Retry()
        return RetryPolicy(
            max_deliveries or self.max_deliveries,
            self.base_ms if r.base_s is None else int(r.base_s * 1000),
            self.cap_ms if r.cap_s is None else min(self.cap_ms, int(r.cap_s * 1000)),
            r.jitter,
            r.non_retriable,
            int(r.retry_after_max_s * 1000),
        )
