"""Each event's lifecycle timeline, as real workers record it in the database."""

from __future__ import annotations

from collections import Counter
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
import redis

from tests.support.engine import STREAM, AnyData, run_burst, xadd
from workers.core.config import EngineConfig
from workers.core.events import Envelope, event_hash
from workers.core.registry import Registry, default_registry
from workers.core.steps import Kind, StepRecord
from workers.models import AgentRun, TimelineStep
from workers.store.timeline_rows import Step, insert, prune, steps_for

pytestmark = pytest.mark.django_db(transaction=True)


def flaky_registry(fail_times: int = 0) -> Registry:
    runs: Counter[str] = Counter()
    registry = Registry()

    async def count(event: Any, ctx: Any) -> None:
        runs[event.hash] += 1
        if runs[event.hash] <= fail_times:
            raise RuntimeError(f"attempt {runs[event.hash]} fails")

    registry.register("test.count", AnyData, count)
    return registry


def hash_of(event: dict[str, Any]) -> str:
    return event_hash(Envelope.model_validate(event))


def kinds(steps: list[Step]) -> list[str]:
    return [s.kind for s in steps]


def test_timeline_happy_event_ran_then_committed(
    r: redis.Redis, redis_url: str, config: EngineConfig
) -> None:
    event = {"type": "test.count", "source": "t", "id": "happy", "data": {}}
    entry = xadd(r, event)
    run_burst(redis_url, config, flaky_registry())

    ran, committed = steps_for(hash_of(event))
    assert (ran.kind, committed.kind) == ("ran", "committed")
    assert {(s.entry_id, s.consumer, s.attempt, s.stream) for s in (ran, committed)} == {
        (entry, "test-worker", 1, STREAM)
    }
    assert ran.at <= committed.at
    assert committed.detail.startswith("agent took ")


def test_timeline_quick_success_stores_no_rows(
    r: redis.Redis, redis_url: str, config: EngineConfig
) -> None:
    """Its ran and committed steps are read off its AgentRun row."""
    xadd(r, {"type": "test.count", "source": "t", "id": "quick", "data": {}})
    run_burst(redis_url, config, flaky_registry())

    assert AgentRun.objects.get().deliveries == 1
    assert not TimelineStep.objects.exists()


def test_timeline_long_agent_stores_its_ran_step_once(
    r: redis.Redis, redis_url: str, config: EngineConfig
) -> None:
    """Written while the agent runs (a worker may die under it), not repeated at commit."""
    event = {"type": "demo.sleep", "source": "t", "id": "slow", "data": {"ms": 700}}
    xadd(r, event)
    run_burst(redis_url, config, default_registry)

    assert list(TimelineStep.objects.values_list("kind", flat=True)) == ["ran"]
    assert kinds(steps_for(hash_of(event))) == ["ran", "committed"]


def test_timeline_duplicate_in_one_batch_is_an_idempotency_hit(
    r: redis.Redis, redis_url: str, config: EngineConfig
) -> None:
    event = {"type": "test.count", "source": "t", "id": "twice", "data": {}}
    first, second = xadd(r, event), xadd(r, event)
    run_burst(redis_url, config, flaky_registry())

    steps = steps_for(hash_of(event))
    assert kinds([s for s in steps if s.entry_id == first]) == ["ran", "committed"]
    [hit] = [s for s in steps if s.entry_id == second]
    assert hit.kind == "idempotency_hit" and first in hit.detail


def test_timeline_duplicate_after_commit_is_an_idempotency_hit(
    r: redis.Redis, redis_url: str, config: EngineConfig
) -> None:
    event = {"type": "test.count", "source": "t", "id": "later", "data": {}}
    xadd(r, event)
    run_burst(redis_url, config, flaky_registry())
    second = xadd(r, event)
    run_burst(redis_url, config, flaky_registry())

    steps = steps_for(hash_of(event))
    assert kinds(steps) == ["ran", "committed", "idempotency_hit"]
    assert steps[-1].entry_id == second


def test_timeline_failure_then_success_records_both_attempts(
    r: redis.Redis, redis_url: str, config: EngineConfig
) -> None:
    event = {"type": "test.count", "source": "t", "id": "flaky", "data": {}}
    xadd(r, event)
    run_burst(redis_url, config, flaky_registry(fail_times=1))

    steps = steps_for(hash_of(event))
    assert [(s.kind, s.attempt) for s in steps] == [
        ("ran", 1),
        ("failed", 1),
        ("ran", 2),
        ("committed", 2),
    ]
    summary, _, traceback = steps[1].detail.partition("\n\n")
    assert summary == "RuntimeError: attempt 1 fails; retry in 50 ms"
    assert traceback.startswith("Traceback (most recent call last):")
    assert steps[2].detail == "retry"  # due after its backoff: no takeover (issue 29)


def test_timeline_poison_event_fails_then_is_dead_lettered(
    r: redis.Redis, redis_url: str, config: EngineConfig
) -> None:
    event = {"type": "demo.fail", "source": "t", "id": "poison", "data": {"message": "always"}}
    xadd(r, event)
    run_burst(redis_url, config, default_registry)

    steps = steps_for(hash_of(event))
    assert kinds(steps) == ["ran", "failed"] * 3 + ["dead_lettered"]
    failure = "workers.examples.demo.agents.DemoFailure: always"
    assert steps[-2].detail.startswith(f"{failure}; no deliveries left\n\nTraceback")
    assert (steps[-1].detail, steps[-1].attempt) == (f"max-deliveries: {failure}", 3)


def test_timeline_long_error_is_clipped(
    r: redis.Redis, redis_url: str, config: EngineConfig
) -> None:
    event = {"type": "demo.fail", "source": "t", "id": "loud", "data": {"message": "x" * 10_000}}
    xadd(r, event)
    run_burst(redis_url, replace(config, max_deliveries=1), default_registry)

    _, failed, dead = steps_for(hash_of(event))
    assert (failed.kind, dead.kind) == ("failed", "dead_lettered")
    assert failed.detail.splitlines()[0].endswith("xxx...; no deliveries left")
    assert len(failed.detail) <= 2000 and failed.detail.endswith("x" * 100)
    assert len(dead.detail) <= 2000


def test_timeline_rejected_event_with_a_hash_is_dead_lettered(
    r: redis.Redis, redis_url: str, config: EngineConfig
) -> None:
    event = {"type": "no.such.type", "source": "t", "id": "orphan", "data": {}}
    entry = xadd(r, event)
    run_burst(redis_url, config, default_registry)

    [step] = steps_for(hash_of(event))
    assert (step.kind, step.entry_id, step.attempt) == ("dead_lettered", entry, 1)
    assert step.detail == "unknown-type: no agent is registered for event type 'no.such.type'"


def test_timeline_undecodable_entry_has_no_steps(
    r: redis.Redis, redis_url: str, config: EngineConfig
) -> None:
    xadd(r, "not json")
    run_burst(redis_url, config, default_registry)

    assert r.xlen(f"{STREAM}:dead") == 1  # the dead letter is its only record
    assert not TimelineStep.objects.exists()


@pytest.mark.parametrize("reader", ["test-worker", "dead-consumer"])
def test_timeline_entry_deleted_while_pending_is_recorded(
    r: redis.Redis, redis_url: str, config: EngineConfig, reader: str
) -> None:
    """Read before by this consumer (its own pending list) or by a dead one (reclaim)."""
    event = {"type": "test.count", "source": "t", "id": "gone", "data": {}}
    r.xgroup_create(STREAM, "agents", id="0", mkstream=True)
    entry = xadd(r, event)
    r.xreadgroup("agents", reader, {STREAM: ">"}, count=1)
    earlier = StepRecord(
        hash_of(event), STREAM, entry, datetime.now(UTC), Kind.BUSY, reader, 1, "before"
    )
    insert([earlier])  # what a worker recorded when it had the entry
    r.xdel(STREAM, entry)
    run_burst(redis_url, config, flaky_registry())

    steps = steps_for(hash_of(event))
    assert kinds(steps) == ["busy", "deleted"]
    assert (steps[-1].entry_id, steps[-1].consumer) == (entry, "test-worker")


def test_timeline_off_writes_nothing(r: redis.Redis, redis_url: str, config: EngineConfig) -> None:
    xadd(r, {"type": "test.count", "source": "t", "id": "quiet", "data": {}})
    run_burst(redis_url, replace(config, timeline=False), flaky_registry())

    assert AgentRun.objects.count() == 1
    assert not TimelineStep.objects.exists()


def test_timeline_keeps_the_latest_steps_oldest_first() -> None:
    start = datetime(2026, 1, 1, tzinfo=UTC)
    insert(
        [
            StepRecord("h", STREAM, f"{i}-0", start + timedelta(seconds=i), Kind.BUSY, "w", i)
            for i in range(5)
        ]
    )
    assert [s.attempt for s in steps_for("h", limit=3)] == [2, 3, 4]


def test_prune_deletes_only_old_steps() -> None:
    now = datetime.now(UTC)
    insert(
        [
            StepRecord("h", STREAM, "1-0", now - timedelta(days=10), Kind.RAN, "w", 1),
            StepRecord("h", STREAM, "1-0", now - timedelta(days=1), Kind.COMMITTED, "w", 1),
        ]
    )
    assert prune(timedelta(days=7)) == 1
    assert kinds(steps_for("h")) == ["committed"]
