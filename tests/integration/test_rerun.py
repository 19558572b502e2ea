"""Force re-run (workers/operations/__init__.py): the one deliberate second execution, audited."""

from __future__ import annotations

import json
from collections import Counter
from typing import Any

import pytest
import redis

from tests.support.engine import AnyData, run_burst
from tests.support.entries import ALICE, DEAD, KEYS, STREAM, event, only_record
from workers import operations
from workers.core.config import EngineConfig
from workers.core.errors import ActionFailed, ActionRefused
from workers.core.events import decode_envelope, event_hash
from workers.core.registry import Registry
from workers.models import AgentRun, RunStatus

pytestmark = pytest.mark.django_db


# -- force re-run --------------------------------------------------------------------------


def rerun_registry(runs: Counter[str]) -> Registry:
    registry = Registry()

    async def count(ev: Any, ctx: Any) -> int:
        runs[ev.hash] += 1
        return runs[ev.hash]

    registry.register("test.count", AnyData, count)
    return registry


def publish_and_run(r: redis.Redis, url: str, config: EngineConfig, runs: Counter[str]) -> str:
    raw = json.dumps({"type": "test.count", "source": "t", "id": "once", "data": {}})
    r.xadd(STREAM, {"event": raw})
    run_burst(url, config, rerun_registry(runs))
    return event_hash(decode_envelope(raw))


@pytest.mark.django_db(transaction=True)
def test_force_rerun_runs_a_succeeded_event_once_more(
    r: redis.Redis, redis_url: str, config: EngineConfig
) -> None:
    runs: Counter[str] = Counter()
    h = publish_and_run(r, redis_url, config, runs)
    out = operations.force_rerun(ALICE, h, "the model was wrong", client=r, keys=KEYS)
    assert (out.outcome, out.count, out.stream, len(out.new_ids)) == ("ok", 1, STREAM, 1)
    row = AgentRun.objects.get()
    assert (row.status, row.error) == (
        RunStatus.FAILED,
        "force re-run by alice: the model was wrong",
    )
    run_burst(redis_url, config, rerun_registry(runs))
    assert runs[h] == 2
    row.refresh_from_db()
    assert (row.status, row.result) == (RunStatus.SUCCEEDED, 2)


@pytest.mark.django_db(transaction=True)
def test_force_rerun_runs_the_agents_steps_again_from_the_start(
    r: redis.Redis, redis_url: str, config: EngineConfig
) -> None:
    calls: Counter[str] = Counter()

    def registry() -> Registry:
        reg = Registry()

        async def agent(ev: Any, ctx: Any) -> str:
            async def answer() -> str:
                calls["step"] += 1
                return f"answer {calls['step']}"

            return str(await ctx.step("ask", answer))

        reg.register("test.count", AnyData, agent)
        return reg

    raw = json.dumps({"type": "test.count", "source": "t", "id": "once", "data": {}})
    r.xadd(STREAM, {"event": raw})
    run_burst(redis_url, config, registry())
    h = event_hash(decode_envelope(raw))
    out = operations.force_rerun(ALICE, h, "the prompt was wrong", client=r, keys=KEYS)
    assert "1 stored steps and checkpoints discarded" in out.detail
    run_burst(redis_url, config, registry())
    # Not the first run's stored answer: the step ran again.
    assert calls["step"] == 2 and AgentRun.objects.get().result == "answer 2"


def test_force_rerun_of_an_unknown_event_is_refused_and_recorded(r: redis.Redis) -> None:
    with pytest.raises(ActionRefused, match="no run"):
        operations.force_rerun(ALICE, "a" * 64, "why", client=r, keys=KEYS)
    record = only_record()
    assert (record.action, record.outcome, record.target) == (
        "force-rerun",
        "refused",
        {"event_hash": "a" * 64},
    )


def make_run(r: redis.Redis, status: RunStatus = RunStatus.SUCCEEDED) -> tuple[str, str]:
    """A finished run of a stream entry still there; returns (event hash, entry id)."""
    raw = event(7)
    entry_id = str(r.xadd(STREAM, {"event": raw}))
    h = event_hash(decode_envelope(raw))
    AgentRun.objects.create(
        event_hash=h,
        event_type="demo.echo",
        stream=STREAM,
        entry_id=entry_id,
        status=status,
        consumer="w1",
        fence="w0/1-0#1",
    )
    r.hset(KEYS.gate(h), mapping={"state": "done", "token": 1})
    return h, entry_id


def test_force_rerun_of_a_running_event_is_refused(r: redis.Redis) -> None:
    h, _ = make_run(r, RunStatus.RUNNING)
    with pytest.raises(ActionRefused, match="running"):
        operations.force_rerun(ALICE, h, "why", client=r, keys=KEYS)
    assert AgentRun.objects.get().status == RunStatus.RUNNING
    assert only_record().outcome == "refused"


def test_force_rerun_clears_the_gate_and_the_fence(r: redis.Redis) -> None:
    h, entry_id = make_run(r)
    out = operations.force_rerun(ALICE, h, "why", client=r, keys=KEYS)
    assert r.hget(KEYS.gate(h), "state") == "released"
    assert AgentRun.objects.get().fence == ""
    [(new_id, fields)] = r.xrange(STREAM, min=f"({entry_id}")
    assert (list(out.new_ids), fields["rerun_of"], fields["event"]) == (
        [new_id],
        entry_id,
        event(7),
    )


def test_force_rerun_takes_the_event_from_its_dead_letter(r: redis.Redis) -> None:
    h, entry_id = make_run(r, RunStatus.DEAD)
    r.xadd(DEAD, {"event": event(7), "stream": STREAM, "entry_id": entry_id, "reason": "x"})
    r.xdel(STREAM, entry_id)
    out = operations.force_rerun(ALICE, h, "why", client=r, keys=KEYS)
    [(_, fields)] = r.xrange(STREAM)
    assert (out.outcome, fields["event"]) == ("ok", event(7))


def test_force_rerun_whose_event_is_gone_is_refused(r: redis.Redis) -> None:
    h, entry_id = make_run(r)
    r.xdel(STREAM, entry_id)
    with pytest.raises(ActionRefused, match="gone"):
        operations.force_rerun(ALICE, h, "why", client=r, keys=KEYS)
    assert AgentRun.objects.get().status == RunStatus.SUCCEEDED  # nothing changed
    assert r.hget(KEYS.gate(h), "state") == "done"


def test_force_rerun_failing_half_way_records_what_was_done(r: redis.Redis) -> None:
    h, _ = make_run(r)
    # A stream at the largest possible id takes no new entry: the republish step fails.
    r.xadd(STREAM, {"event": "{}"}, id="18446744073709551615-18446744073709551615")
    with pytest.raises(ActionFailed):
        operations.force_rerun(ALICE, h, "why", client=r, keys=KEYS)
    record = only_record()
    assert (record.outcome, record.count) == ("failed", 0)
    assert record.detail.startswith("gate record cleared; run marked failed (was succeeded);")
    assert "then failed" in record.detail
