"""How an agent's failure is told apart, from what it raised: a timeout, one no retry can
mend (``NonRetriable`` or a type its policy names), or a service's "come back later" (an
HTTP 429 or 503 with Retry-After) to wait out without spending a delivery. Pure."""

from __future__ import annotations

import email.utils
import time
from dataclasses import dataclass
from typing import Any

from workers.core.errors import AgentTimeout, NonRetriable, RetryAfter
from workers.core.retry import NON_RETRIABLE, RETRY_AFTER_MAX_S, TIMEOUT, Retry

# HTTP answers whose Retry-After means "the same request will do, later".
WAIT_STATUSES = frozenset({429, 503})
# How far down an exception's causes a Retry-After is looked for (an SDK's error wrapped
# in the agent's own, and so on); a loop of causes must end.
MAX_CAUSES = 8


@dataclass(frozen=True, slots=True)
class Failure:
    # "" (it raised), ``TIMEOUT`` or ``NON_RETRIABLE``: what RetryPolicy.after_failure takes.
    kind: str = ""
    # Wait this long and run again, not counted as a delivery (a Retry-After).
    wait_ms: int | None = None


RAISED = Failure()


def classify(exc: BaseException, retry: Retry | None) -> Failure:
    """Sort what an agent raised, under its declared ``retry`` (None: the defaults)."""
    if isinstance(exc, AgentTimeout):
        return Failure(TIMEOUT)
    if isinstance(exc, NonRetriable) or (
        retry is not None and isinstance(exc, retry.non_retriable)
    ):
        return Failure(NON_RETRIABLE)
    wait_s = retry_after_s(exc)
    max_s = RETRY_AFTER_MAX_S if retry is None else retry.retry_after_max_s
    if wait_s is not None and wait_s <= max_s:
        return Failure(wait_ms=max(int(wait_s * 1000), 1))
    return RAISED


def retry_after_s(exc: BaseException | None, now: float | None = None) -> float | None:
    """Seconds a service asked to wait: a ``RetryAfter``, or an HTTP error of status 429 or
    503 carrying Retry-After (or ``retry-after-ms``) on its ``response``, as ``httpx``,
    ``requests`` and ``openai`` errors do; looked for down the chain of causes."""
    for _ in range(MAX_CAUSES):
        if exc is None:
            return None
        if isinstance(exc, RetryAfter):
            return max(exc.retry_after_s, 0.0)
        wait = _http_wait_s(exc, time.time() if now is None else now)
        if wait is not None:
            return wait
        exc = exc.__cause__ or exc.__context__
    return None


def _http_wait_s(exc: BaseException, now: float) -> float | None:
    try:
        response = getattr(exc, "response", None)
        status = getattr(exc, "status_code", None) or getattr(response, "status_code", None)
        if status not in WAIT_STATUSES:
            return None
        return header_wait_s(getattr(response, "headers", None), now)
    except Exception:  # an odd object's property raising: no wait found
        return None


def header_wait_s(headers: Any, now: float) -> float | None:
    """``retry-after-ms`` (OpenAI's), else Retry-After in seconds or as an HTTP date."""
    if headers is None:
        return None
    raw_ms = _header(headers, "retry-after-ms")
    if raw_ms:
        try:
            return max(float(raw_ms) / 1000, 0.0)
        except ValueError:
            pass
    raw = _header(headers, "retry-after")
    if not raw:
        return None
    try:
        return max(float(raw), 0.0)
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(raw)
    except (TypeError, ValueError):
        return None
    return max(when.timestamp() - now, 0.0)


def _header(headers: Any, name: str) -> str | None:
    """httpx's and requests' headers ignore case; a plain dict may not."""
    value = headers.get(name) or headers.get(name.title())
    return None if value is None else str(value).strip()
