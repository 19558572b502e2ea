"""How an agent's failure is told apart (workers/policy/failures.py, issue 29): a timeout,
a non-retriable error, a Retry-After read off an HTTP error and its causes."""

from __future__ import annotations

import email.utils

import httpx

from workers.core.errors import AgentTimeout, NonRetriable, RetryAfter
from workers.core.retry import Retry
from workers.policy import Failure, classify, retry_after_s
from workers.runtime.llm.errors import ModelCallFailed

NOW = 1_800_000_000.0


def http_error(status: int, **headers: str) -> httpx.HTTPStatusError:
    request = httpx.Request("POST", "https://api.example.com/v1/chat/completions")
    response = httpx.Response(status, headers=headers, request=request)
    return httpx.HTTPStatusError(f"{status}", request=request, response=response)


def test_agent_failures_retry_after_in_seconds_on_a_429() -> None:
    assert retry_after_s(http_error(429, **{"Retry-After": "7"}), NOW) == 7.0


def test_agent_failures_retry_after_as_an_http_date_on_a_503() -> None:
    when = email.utils.formatdate(NOW + 30, usegmt=True)
    assert retry_after_s(http_error(503, **{"Retry-After": when}), NOW) == 30.0


def test_agent_failures_retry_after_ms_wins() -> None:
    error = http_error(429, **{"retry-after-ms": "1500", "Retry-After": "9"})
    assert retry_after_s(error, NOW) == 1.5


def test_agent_failures_retry_after_only_on_429_and_503() -> None:
    assert retry_after_s(http_error(500, **{"Retry-After": "7"}), NOW) is None
    assert retry_after_s(http_error(429), NOW) is None


def test_agent_failures_retry_after_found_down_the_causes() -> None:
    try:
        try:
            raise http_error(429, **{"Retry-After": "2"})
        except httpx.HTTPStatusError as exc:
            raise ModelCallFailed("model 'm': rate limited") from exc
    except ModelCallFailed as wrapped:
        assert retry_after_s(wrapped, NOW) == 2.0


def test_agent_failures_classify() -> None:
    assert classify(AgentTimeout("late"), None) == Failure("timeout")
    assert classify(NonRetriable("no"), None) == Failure("non-retriable")
    assert classify(KeyError("k"), Retry(non_retriable=(LookupError,))) == Failure("non-retriable")
    assert classify(RetryAfter(3), None) == Failure(wait_ms=3000)
    assert classify(RuntimeError("x"), None) == Failure()


def test_agent_failures_a_wait_past_the_maximum_is_a_failure() -> None:
    error = http_error(429, **{"Retry-After": "3600"})
    assert classify(error, None) == Failure()  # 10 minutes at most by default
    assert classify(error, Retry(retry_after_max_s=7200)) == Failure(wait_ms=3_600_000)
