from __future__ import annotations

from workers.core.retry import RetryPolicy, Verdict


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
