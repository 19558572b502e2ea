"""Operator actions on one agent of several (issue 31 item 1): each acts on the runs of the
group it names, never on another agent's run of the same event.

Agent A runs without a name, in the home group, so its gate records and rows are keyed by
the event's own hash; agent B (``summarise``) runs in ``agents:summarise`` under its run
hash. An action that hashed B's entries as the events' would find A's records instead."""

from __future__ import annotations

import json
from typing import Any

import pytest
import redis
from pydantic import BaseModel

from tests.support.engine import STREAM, run_fleet
from tests.support.entries import ALICE, DEAD, KEYS, pending_entries
from workers import operations
from workers.core.config import EngineConfig
from workers.core.errors import ActionRefused
from workers.core.events import decode_envelope, event_hash
from workers.core.fanout import REPLAY_FIELD, TARGET_FIELD, run_hash
from workers.core.registry import Registry
from workers.models import AgentRun
from workers.operations import DIRECT_MAX, jobs
from workers.operations.actions import DeadFilter
from workers.redis.consumers import Target

pytestmark = pytest.mark.django_db(transaction=True)

HOME, B = "agents", "agents:summarise"


class Ticket(BaseModel):
    n: int


def agents(failing: set[int], b_deliveries: int = 1) -> Registry:
    """A (no name, the home group) takes every ticket; B fails those in ``failing`` for
    good (``b_deliveries``: one by default), so a test can fix B by emptying the set."""
    registry = Registry()

    @registry.agent("ticket.created", schema=Ticket)
    async def triage(event: Any, ctx: object) -> str:
        return "triaged"

    @registry.agent("ticket.created", schema=Ticket, name="summarise", max_deliveries=b_deliveries)
    async def summarise(event: Any, ctx: object) -> str:
        if event.data.n in failing:
            raise RuntimeError(f"cannot summarise ticket {event.data.n}")
        return "summarised"

    return registry


def publish(r: redis.Redis, n: int) -> list[str]:
    """Tickets 1..n; their event hashes."""
    raws = [
        json.dumps({"type": "ticket.created", "source": "t", "id": f"e{i}", "data": {"n": i}})
        for i in range(1, n + 1)
    ]
    for raw in raws:
        r.xadd(STREAM, {"event": raw})
    return [event_hash(decode_envelope(raw)) for raw in raws]


def read_unrun(r: redis.Redis, group: str, consumer: str = "gone-worker") -> list[str]:
    """The group's new entries, read by a worker that died before running them."""
    replies = r.xreadgroup(group, consumer, {STREAM: ">"})
    return [str(entry_id) for entry_id, _ in replies[0][1]] if replies else []


def row(agent: str, n: int) -> AgentRun:
    return AgentRun.objects.get(agent=agent, event_id=f"e{n}")


def group_stat(r: redis.Redis, group: str, name: str) -> str | None:
    return r.hget(KEYS.group_stats(STREAM, group), name)


def test_dead_letter_by_hand_in_b_group_closes_b_row_not_a(
    r: redis.Redis, redis_url: str, config: EngineConfig
) -> None:
    registry = agents(failing=set())
    run_fleet(redis_url, config, registry)  # every group, before the events
    hashes = publish(r, 3)
    run_fleet(redis_url, config, registry, agents=["ticket.created"])  # A alone runs them
    ids = read_unrun(r, B)
    out = operations.dead_letter(ALICE, STREAM, B, ids, "bad tickets", client=r, keys=KEYS)
    # A's done records are not B's: B's entries are moved, not skipped as "already done".
    assert (out.outcome, out.count, out.skipped) == ("ok", 3, 0)
    assert {f["group"] for _, f in r.xrange(DEAD)} == {B}
    assert r.xpending(STREAM, B)["pending"] == 0
    # Counted as B's, as B's own dead letters are (the console's per-agent figures).
    assert group_stat(r, B, "dead_lettered") == "3"
    assert group_stat(r, HOME, "dead_lettered") is None
    for n, h in enumerate(hashes, start=1):
        a, b = row("", n), row("summarise", n)
        assert (a.event_hash, a.status, a.attempts) == (h, "succeeded", 1)
        assert (b.event_hash, b.event_key, b.status) == (run_hash(h, "summarise"), h, "dead")
        assert r.hget(KEYS.gate(h), "state") == "done"
        # B's record is the one held against a worker that read the entry a moment before.
        assert r.hget(KEYS.gate(run_hash(h, "summarise")), "owner") == "dead-letter:alice"


def test_retry_and_claim_in_b_group_act_on_b_runs(
    r: redis.Redis, redis_url: str, config: EngineConfig
) -> None:
    registry = agents(failing=set(), b_deliveries=5)  # a reclaim is one more delivery
    run_fleet(redis_url, config, registry)
    hashes = publish(r, 3)
    ids = read_unrun(r, B)
    # B runs ticket 1 now on a live worker; A runs ticket 2 now (its own run, not B's).
    now_ms = int(r.time()[0]) * 1000
    for h, owner in ((run_hash(hashes[0], "summarise"), "b-live"), (hashes[1], "a-live")):
        lease = {"state": "running", "owner": f"{owner}/1-0", "lease_until": now_ms + 60_000}
        r.hset(KEYS.gate(h), mapping=lease)
    out = operations.claim(ALICE, STREAM, B, ids, "b-new", target=Target.ANY, client=r, keys=KEYS)
    assert (out.outcome, out.count) == ("ok", 3)
    owners = {p["consumer"] for p in r.xpending_range(STREAM, B, "-", "+", 10)}
    assert owners == {"b-new"} and r.xpending(STREAM, HOME)["pending"] == 0
    out = operations.retry_now(
        ALICE, STREAM, B, ids, client=r, keys=KEYS, claim_idle_ms=config.claim_idle_ms
    )
    assert (out.outcome, out.count, out.skipped) == ("ok", 2, 1)
    assert "running now on b-live" in out.detail
    # Once B's own lease is gone, B's workers take all three; A ran each once meanwhile.
    r.delete(KEYS.gate(run_hash(hashes[0], "summarise")), KEYS.gate(hashes[1]))
    run_fleet(redis_url, config, registry)
    assert set(AgentRun.objects.values_list("agent", "status", "attempts")) == {
        ("", "succeeded", 1),
        ("summarise", "succeeded", 1),
    }
    assert AgentRun.objects.count() == 6


def test_redriving_b_letter_runs_only_b(
    r: redis.Redis, redis_url: str, config: EngineConfig
) -> None:
    failing = {2}
    registry = agents(failing)
    hashes = publish(r, 3)
    run_fleet(redis_url, config, registry)
    [(dead_id, letter)] = r.xrange(DEAD)
    assert letter["group"] == B and row("summarise", 2).status == "dead"
    a_before = row("", 2)
    hits_before = group_stat(r, HOME, "idempotency_hits")
    # A's run of ticket 2 is done, B's is not: a redrive would run B, not be a hit.
    preview = operations.preview_redrive(STREAM, DeadFilter(), client=r, keys=KEYS)
    assert (preview.matching, preview.already_done) == (1, 0)
    failing.clear()  # B is fixed
    out = operations.redrive(ALICE, STREAM, [dead_id], skip_done=True, client=r, keys=KEYS)
    assert (out.outcome, out.count) == ("ok", 1)
    [(_, fields)] = r.xrange(STREAM, out.new_ids[0], out.new_ids[0])
    assert fields[TARGET_FIELD] == B
    run_fleet(redis_url, config, registry)
    b = row("summarise", 2)
    assert (b.event_hash, b.status) == (run_hash(hashes[1], "summarise"), "succeeded")
    a = row("", 2)
    assert (a.status, a.attempts, a.finished_at) == ("succeeded", 1, a_before.finished_at)
    # The home group acked the redriven entry unread: not even a duplicate to it.
    assert group_stat(r, HOME, "idempotency_hits") == hits_before
    assert group_stat(r, HOME, "processed") == "3"


def test_force_rerun_of_b_run_reruns_only_b(
    r: redis.Redis, redis_url: str, config: EngineConfig
) -> None:
    registry = agents(failing=set())
    hashes = publish(r, 2)
    run_fleet(redis_url, config, registry)
    a_before, b_before = row("", 1), row("summarise", 1)
    out = operations.force_rerun(
        ALICE, b_before.event_hash, "summary was wrong", client=r, keys=KEYS
    )
    assert (out.outcome, out.count) == ("ok", 1)
    [(_, fields)] = r.xrange(STREAM, out.new_ids[0], out.new_ids[0])
    assert (fields[TARGET_FIELD], fields["rerun_of"]) == (B, b_before.entry_id)
    run_fleet(redis_url, config, registry)
    b = row("summarise", 1)
    assert (b.event_hash, b.status) == (run_hash(hashes[0], "summarise"), "succeeded")
    assert b.finished_at > b_before.finished_at  # type: ignore[operator]
    a = row("", 1)
    assert (a.status, a.attempts, a.finished_at) == ("succeeded", 1, a_before.finished_at)
    assert group_stat(r, HOME, "idempotency_hits") is None
    assert group_stat(r, B, "processed") == "3"


def test_cancel_of_b_waiting_run_leaves_a_run_pending(
    r: redis.Redis, redis_url: str, config: EngineConfig
) -> None:
    registry = agents(failing=set())
    run_fleet(redis_url, config, registry)
    [h] = publish(r, 1)
    [entry_id] = read_unrun(r, B)
    assert read_unrun(r, HOME) == [entry_id]
    out = operations.cancel(ALICE, run_hash(h, "summarise"), "not needed", client=r, keys=KEYS)
    assert (out.outcome, out.count) == ("ok", 1)
    assert r.xpending(STREAM, B)["pending"] == 0
    assert r.xpending(STREAM, HOME)["pending"] == 1  # A's run of the event is A's
    assert r.hget(KEYS.gate(run_hash(h, "summarise")), "state") == "cancelled"
    assert not r.exists(KEYS.gate(h))
    assert (group_stat(r, B, "cancelled"), group_stat(r, HOME, "cancelled")) == ("1", None)
    # A run that never started gets its row, B's, so its page says what became of it.
    closed = AgentRun.objects.get(event_hash=run_hash(h, "summarise"))
    assert (closed.status, closed.agent, closed.event_key) == ("cancelled", "summarise", h)


def test_cancel_of_pending_rows_in_b_group_cancels_b_run(
    r: redis.Redis, redis_url: str, config: EngineConfig
) -> None:
    registry = agents(failing=set())
    run_fleet(redis_url, config, registry)
    [h] = publish(r, 1)
    ids = read_unrun(r, B)
    run_fleet(redis_url, config, registry, agents=["ticket.created"])  # A is done with it
    out = operations.cancel_entries(ALICE, STREAM, B, ids, client=r, keys=KEYS)
    # Hashed as A's run, it would be "already done"; as B's, it is cancelled.
    assert (out.outcome, out.count) == ("ok", 1)
    assert r.hget(KEYS.gate(run_hash(h, "summarise")), "state") == "cancelled"
    assert r.hget(KEYS.gate(h), "state") == "done"
    assert row("summarise", 1).status == "cancelled" and row("", 1).status == "succeeded"


def test_dead_letter_job_in_b_group_keeps_the_home_group_it_was_asked_under(
    r: redis.Redis,
) -> None:
    """Over 1,000 ids the action is a bulk job, run later by any runner: it acts on the
    runs of the group's agent under the home group the action was given (here not the
    default one), though A's runs of the same events are done."""
    home, group = "fleet", "fleet:summarise"
    ids = pending_entries(r, DIRECT_MAX + 1, group=group)
    raws = [fields["event"] for _, fields in r.xrange(STREAM)]
    with r.pipeline(transaction=False) as pipe:
        for raw in raws:  # A (the home agent) ran every one of them
            pipe.hset(KEYS.gate(event_hash(decode_envelope(raw))), "state", "done")
        pipe.execute()
    out = operations.dead_letter(
        ALICE, STREAM, group, ids, "bad batch", client=r, keys=KEYS, home=home
    )
    assert out.outcome == "queued" and out.job_id is not None
    job = jobs.run(out.job_id, r, KEYS, "test-runner")
    assert (job.status, job.done, job.skipped) == ("done", DIRECT_MAX + 1, 0)
    assert set(AgentRun.objects.values_list("agent", "status")) == {("summarise", "dead")}
    assert AgentRun.objects.count() == DIRECT_MAX + 1


def test_force_rerun_of_a_replay_reruns_the_replay(
    r: redis.Redis, redis_url: str, config: EngineConfig
) -> None:
    """A forced replay's run is keyed by its salt: its re-run carries the salt, so it is
    the replay that runs again, not a hit on the first run."""
    registry = agents(failing=set())
    [h] = publish(r, 1)
    raw = r.xrange(STREAM)[0][1]["event"]
    r.xadd(STREAM, {"event": raw, TARGET_FIELD: B, REPLAY_FIELD: "job-7"})
    run_fleet(redis_url, config, registry)
    replay = AgentRun.objects.get(replay_of=run_hash(h, "summarise"))
    assert replay.event_hash == run_hash(h, "summarise", "job-7")
    out = operations.force_rerun(ALICE, replay.event_hash, "again", client=r, keys=KEYS)
    [(_, fields)] = r.xrange(STREAM, out.new_ids[0], out.new_ids[0])
    assert (fields[TARGET_FIELD], fields[REPLAY_FIELD]) == (B, "job-7")
    run_fleet(redis_url, config, registry)
    again = AgentRun.objects.get(pk=replay.pk)
    assert again.status == "succeeded" and again.finished_at > replay.finished_at  # type: ignore[operator]
    assert AgentRun.objects.count() == 3  # A's run, B's first run and B's replay
    # Its entry gone (its event still in a dead letter): the salt went with the entry.
    r.xdel(STREAM, again.entry_id)
    r.xadd(DEAD, {"event": raw, "stream": STREAM, "entry_id": again.entry_id, "group": B})
    with pytest.raises(ActionRefused, match="is a replay and its stream entry"):
        operations.force_rerun(ALICE, replay.event_hash, "again", client=r, keys=KEYS)


def test_redriving_a_replays_letter_runs_the_replay_again(
    r: redis.Redis, redis_url: str, config: EngineConfig
) -> None:
    """The letter of a forced replay's run keeps the replay's salt, and its redrive carries
    it: the replay runs again, instead of being a hit on the agent's first run."""
    failing: set[int] = set()
    registry = agents(failing)
    [h] = publish(r, 1)
    run_fleet(redis_url, config, registry)  # B's first run succeeds
    raw = r.xrange(STREAM)[0][1]["event"]
    failing.add(1)
    r.xadd(STREAM, {"event": raw, TARGET_FIELD: B, REPLAY_FIELD: "job-8"})
    run_fleet(redis_url, config, registry)
    [(dead_id, letter)] = r.xrange(DEAD)
    assert (letter["group"], letter[REPLAY_FIELD]) == (B, "job-8")
    failing.clear()
    out = operations.redrive(ALICE, STREAM, [dead_id], client=r, keys=KEYS)
    [(_, fields)] = r.xrange(STREAM, out.new_ids[0], out.new_ids[0])
    assert (fields[TARGET_FIELD], fields[REPLAY_FIELD]) == (B, "job-8")
    run_fleet(redis_url, config, registry)
    replay = AgentRun.objects.get(event_hash=run_hash(h, "summarise", "job-8"))
    assert (replay.status, replay.replay_of) == ("succeeded", run_hash(h, "summarise"))
