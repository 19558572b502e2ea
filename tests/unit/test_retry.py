from __future__ import annotations

import pytest

from workers.core.errors import ConfigurationError
from workers.core.retry import NON_RETRIABLE, TIMEOUT, Retry, RetryPolicy, Verdict


def test_backoff_grows_with_deliveries() -> None:
    policy = RetryPolicy(max_deliveries=10, base_ms=100, cap_ms=60_000)
    assert [policy.backoff_ms(n) for n in (1, 2, 3, 4)] == [100, 200, 400, 800]


def test_backoff_is_capped_by_the_reclaim_idle_time() -> None:
    policy = RetryPolicy(max_deliveries=100, base_ms=1000, cap_ms=5000)
    assert policy.backoff_ms(50) == 5000


def test_failure_before_the_limit_retries() -> None:
    decision = RetryPolicy(max_deliveries=3, base_ms=10).after_failure(2)
    assert decision.verdict is Verdict.RETRY
    assert decision.retry_in_ms == 20


def test_failure_at_the_limit_dead_letters() -> None:
    assert RetryPolicy(max_deliveries=3).after_failure(3).verdict is Verdict.DEAD


def test_exhausted_only_past_the_limit() -> None:
    policy = RetryPolicy(max_deliveries=3)
    assert not policy.exhausted(3)
    assert policy.exhausted(4)


def test_retry_jitter_draws_below_the_backoff_never_above() -> None:
    policy = RetryPolicy(max_deliveries=10, base_ms=1000, jitter=0.5)
    assert policy.backoff_ms(1, draw=lambda: 0.0) == 1000
    assert policy.backoff_ms(1, draw=lambda: 1.0) == 500


def test_retry_timeout_at_the_limit_dead_letters_as_timeout() -> None:
    policy = RetryPolicy(max_deliveries=2)
    assert policy.after_failure(1, TIMEOUT).verdict is Verdict.RETRY
    assert policy.after_failure(2, TIMEOUT).reason == "timeout"


def test_retry_non_retriable_dead_letters_at_the_first_delivery() -> None:
    decision = RetryPolicy(max_deliveries=5).after_failure(1, NON_RETRIABLE)
    assert (decision.verdict, decision.reason) == (Verdict.DEAD, "non-retriable")


def test_retry_declared_goes_over_the_worker_policy_within_its_cap() -> None:
    worker = RetryPolicy(max_deliveries=5, base_ms=1000, cap_ms=60_000)
    own = worker.declared(8, Retry(base_s=0.25, cap_s=600, jitter=0.1))
    assert (own.max_deliveries, own.base_ms, own.cap_ms, own.jitter) == (8, 250, 60_000, 0.1)
    assert worker.declared(None, None) is worker


def test_retry_refuses_a_jitter_over_one() -> None:
    with pytest.raises(ConfigurationError):
        Retry(jitter=2)
