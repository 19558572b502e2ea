"""Cancelling a run (issue 29, item 4), in-process against a real server and database: a
running async agent is cancelled (CancelledError, ``ctx.cancelled``), a running sync agent
sees ``ctx.cancelled`` and returns, a waiting entry is cancelled from the operator's side;
each run ends ``cancelled``, its entry acked, counted, on its timeline and audited, and no
copy of the event runs again. A worker that missed the announcement learns at its next
lease renewal."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import redis
from django.db import connection

from tests.support.engine import STREAM, AnyData, counters, pending, run_burst, xadd
from workers import operations
from workers.core.config import EngineConfig
from workers.core.errors import ActionRefused
from workers.core.events import stored_hash
from workers.core.registry import Registry
from workers.models import AgentRun, AuditRecord, Door, RunStatus
from workers.operations import Actor
from workers.store.timeline_rows import steps_for

pytestmark = pytest.mark.django_db(transaction=True)

ALICE = Actor("alice", Door.CLI)
ROOT = Path(__file__).resolve().parents[2]


def publish(r: redis.Redis, event: dict[str, Any]) -> tuple[str, str]:
    """(entry id, event hash)."""
    payload = json.dumps(event)
    return xadd(r, payload), stored_hash(payload)


def in_thread(started: threading.Event, action: Callable[[], object]) -> threading.Thread:
    """Once the agent started: ``action``, from another thread, as an operator would."""

    def go() -> None:
        try:
            if started.wait(10):
                action()
        finally:
            connection.close()

    thread = threading.Thread(target=go)
    thread.start()
    return thread


def assert_cancelled(r: redis.Redis, event_hash: str, by: str = "alice") -> AgentRun:
    row = AgentRun.objects.get(event_hash=event_hash)
    assert row.status == RunStatus.CANCELLED
    assert row.error.startswith(f"cancelled by {by}")
    assert r.hget(f"streamdesk:idem:{event_hash}", "state") == "cancelled"
    assert pending(r) == 0
    assert counters(r)["cancelled"] == 1
    kinds = [s.kind for s in steps_for(event_hash)]
    assert kinds[-1] == "cancelled"
    return row


def test_cancel_running_async_agent_is_cancelled_and_ends_cancelled(
    r: redis.Redis, redis_url: str, config: EngineConfig
) -> None:
    started, seen = threading.Event(), {}
    registry = Registry()

    @registry.agent("t.long", schema=AnyData)
    async def long(event: Any, ctx: Any) -> str:
        started.set()
        try:
            await asyncio.sleep(30)
        except asyncio.CancelledError:
            seen["cancelled"] = ctx.cancelled
            raise
        return "never"

    _, event_hash = publish(r, {"type": "t.long", "source": "t", "id": "a", "data": {}})
    outcomes: list[operations.ActionOutcome] = []
    thread = in_thread(
        started,
        lambda: outcomes.append(
            operations.cancel(ALICE, event_hash, "wrong customer", client=r, keys=config.keys)
        ),
    )
    began = time.monotonic()
    run_burst(redis_url, config, registry)
    thread.join()

    assert time.monotonic() - began < 10  # not the agent's 30 s
    assert seen == {"cancelled": True}
    row = assert_cancelled(r, event_hash)
    assert row.error == "cancelled by alice: wrong customer"
    assert [o.outcome for o in outcomes] == ["ok"]
    assert "cancel requested" in outcomes[0].detail
    record = AuditRecord.objects.get(action="cancel")
    assert (record.actor, record.door, record.reason) == ("alice", "cli", "wrong customer")


def test_cancel_running_sync_agent_sees_ctx_cancelled_and_ends_cancelled(
    r: redis.Redis, redis_url: str, config: EngineConfig
) -> None:
    started, seen = threading.Event(), {}
    registry = Registry()

    @registry.agent("t.steps", schema=AnyData)
    def steps(event: Any, ctx: Any) -> str:
        started.set()
        deadline = time.monotonic() + 20
        while not ctx.cancelled and time.monotonic() < deadline:
            time.sleep(0.02)  # one step of a long loop
        seen["cancelled"] = ctx.cancelled
        return "stopped between steps"

    _, event_hash = publish(r, {"type": "t.steps", "source": "t", "id": "s", "data": {}})
    thread = in_thread(
        started, lambda: operations.cancel(ALICE, event_hash, client=r, keys=config.keys)
    )
    began = time.monotonic()
    run_burst(redis_url, config, registry)
    thread.join()

    assert time.monotonic() - began < 10
    assert seen == {"cancelled": True}
    row = assert_cancelled(r, event_hash)
    assert row.result is None  # what it returned after the request is not its result
    assert counters(r).get("processed", 0) == 0


def test_cancel_pending_entry_acks_it_and_no_copy_runs(
    r: redis.Redis, redis_url: str, config: EngineConfig
) -> None:
    ran: list[str] = []
    registry = Registry()

    @registry.agent("t.wait", schema=AnyData)
    async def wait(event: Any, ctx: Any) -> None:
        ran.append(event.id)

    event = {"type": "t.wait", "source": "t", "id": "w", "data": {}}
    entry_id, event_hash = publish(r, event)
    r.xgroup_create(STREAM, "agents", id="0")
    r.xreadgroup("agents", "gone-worker", {STREAM: ">"})  # read, then its worker died
    assert pending(r) == 1

    outcome = operations.cancel_entries(
        ALICE, STREAM, "agents", [entry_id], "not needed", client=r, keys=config.keys
    )
    assert (outcome.outcome, outcome.count) == ("ok", 1)
    assert "never started" in outcome.detail
    assert_cancelled(r, event_hash)

    publish(r, event)  # a duplicate arrives later: a hit, nothing runs
    run_burst(redis_url, config, registry)
    assert ran == []
    assert counters(r)["idempotency_hits"] == 1


def test_cancel_by_hash_finds_a_pending_entry_that_never_started(
    r: redis.Redis, config: EngineConfig
) -> None:
    entry_id, event_hash = publish(r, {"type": "t.x", "source": "t", "id": "p", "data": {}})
    r.sadd(config.keys.streams_index, STREAM)
    r.xgroup_create(STREAM, "agents", id="0")
    r.xreadgroup("agents", "gone-worker", {STREAM: ">"})

    outcome = operations.cancel(ALICE, event_hash, client=r, keys=config.keys)

    assert outcome.ids == (entry_id,)
    assert_cancelled(r, event_hash)


def test_cancel_refuses_an_unknown_hash_and_a_finished_run(
    r: redis.Redis, redis_url: str, config: EngineConfig
) -> None:
    with pytest.raises(ActionRefused, match="unknown event hash"):
        operations.cancel(ALICE, "ab" * 32, client=r, keys=config.keys)
    registry = Registry()

    @registry.agent("t.quick", schema=AnyData)
    async def quick(event: Any, ctx: Any) -> str:
        return "ok"

    _, event_hash = publish(r, {"type": "t.quick", "source": "t", "id": "q", "data": {}})
    run_burst(redis_url, config, registry)
    with pytest.raises(ActionRefused, match="already finished"):
        operations.cancel(ALICE, event_hash, client=r, keys=config.keys)
    assert AgentRun.objects.get(event_hash=event_hash).status == RunStatus.SUCCEEDED
    outcomes = list(AuditRecord.objects.values_list("outcome", flat=True))
    assert outcomes == ["refused", "refused"]


def test_cancel_reaches_a_worker_that_missed_the_announcement_at_its_lease_renewal(
    r: redis.Redis, redis_url: str, config: EngineConfig
) -> None:
    started = threading.Event()
    registry = Registry()

    @registry.agent("t.deaf", schema=AnyData)
    async def deaf(event: Any, ctx: Any) -> None:
        started.set()
        await asyncio.sleep(30)

    _, event_hash = publish(r, {"type": "t.deaf", "source": "t", "id": "d", "data": {}})
    # The request written as cancel.lua writes it, with no message on the channel.
    record = f"streamdesk:idem:{event_hash}"
    thread = in_thread(started, lambda: r.hset(record, mapping={"cancel": "bob"}))
    began = time.monotonic()
    run_burst(redis_url, config, registry)
    thread.join()

    assert time.monotonic() - began < config.lease_ms / 1000 + 5
    assert_cancelled(r, event_hash, by="bob")


def test_cancel_command_cancels_a_waiting_run_then_exits_2_as_already_finished(
    r: redis.Redis, worker_env: dict[str, str]
) -> None:
    _, event_hash = publish(r, {"type": "t.x", "source": "t", "id": "c", "data": {}})
    r.sadd("streamdesk:stats:streams", STREAM)
    r.xgroup_create(STREAM, "agents", id="0")
    r.xreadgroup("agents", "gone-worker", {STREAM: ">"})

    def cancel(*args: str) -> subprocess.CompletedProcess[str]:
        command = [sys.executable, "manage.py", "cancel", *args, "--json"]
        return subprocess.run(
            command, cwd=ROOT, env=worker_env, capture_output=True, text=True, timeout=60
        )

    done = cancel(event_hash, "--reason", "duplicate order")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["outcome"] == "ok"
    assert_cancelled(r, event_hash, by="cli:")
    again = cancel(event_hash)
    assert again.returncode == 2
    assert "already finished (cancelled)" in again.stderr
    unknown = cancel("cd" * 32)
    assert unknown.returncode == 2 and "unknown event hash" in unknown.stderr
    record = AuditRecord.objects.filter(action="cancel").order_by("id").first()
    assert record is not None and record.reason == "duplicate order"


def test_cancel_then_force_rerun_runs_the_event_again(
    r: redis.Redis, redis_url: str, config: EngineConfig
) -> None:
    ran: list[str] = []
    registry = Registry()

    @registry.agent("t.again", schema=AnyData)
    async def again(event: Any, ctx: Any) -> str:
        ran.append(event.id)
        return "ok"

    entry_id, event_hash = publish(r, {"type": "t.again", "source": "t", "id": "g", "data": {}})
    r.xgroup_create(STREAM, "agents", id="0")
    r.xreadgroup("agents", "gone-worker", {STREAM: ">"})
    operations.cancel_entries(ALICE, STREAM, "agents", [entry_id], client=r, keys=config.keys)

    operations.force_rerun(ALICE, event_hash, "cancelled by mistake", client=r, keys=config.keys)
    run_burst(redis_url, config, registry)

    assert ran == ["g"]
    assert AgentRun.objects.get(event_hash=event_hash).status == RunStatus.SUCCEEDED


def test_cancel_of_a_keyed_agent_hands_its_key_to_the_next_event(
    r: redis.Redis, redis_url: str, config: EngineConfig
) -> None:
    started, ran = threading.Event(), []
    registry = Registry()

    @registry.agent("t.keyed", schema=AnyData, key="subject", concurrency=1)
    async def keyed(event: Any, ctx: Any) -> None:
        ran.append(event.id)
        if event.id == "first":
            started.set()
            await asyncio.sleep(30)

    _, first = publish(
        r, {"type": "t.keyed", "source": "t", "id": "first", "subject": "k", "data": {}}
    )
    publish(r, {"type": "t.keyed", "source": "t", "id": "second", "subject": "k", "data": {}})
    thread = in_thread(started, lambda: operations.cancel(ALICE, first, client=r, keys=config.keys))
    began = time.monotonic()
    run_burst(redis_url, config, registry)
    thread.join()

    assert time.monotonic() - began < 10
    assert ran == ["first", "second"]
    assert_cancelled(r, first)
