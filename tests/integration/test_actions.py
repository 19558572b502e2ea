"""Operator actions (workers/operations/actions.py) against a real server, one function at a
time."""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import replace

import pytest
import redis

from tests.support.actions import (
    DEAD,
    GROUP,
    KEYS,
    acquire,
    counting_registry,
    event,
    hash_of,
    owners,
    read_by,
)
from tests.support.engine import STREAM, counters, pending, run_burst, xadd
from workers.core.config import EngineConfig
from workers.gate import Outcome
from workers.models import AgentRun, RunStatus
from workers.operations import actions
from workers.operations.actions import ActionRefused, DeadFilter
from workers.redis.bus import xadd_many

pytestmark = pytest.mark.django_db(transaction=True)


# -- claim --------------------------------------------------------------------------------


def test_claim_moves_entries_keeping_delivery_counts(r: redis.Redis) -> None:
    ids = read_by(r, "gone-worker", 3)
    result = actions.claim(r, STREAM, GROUP, ids[:2], "rescuer")
    assert (result.done, result.skipped) == (ids[:2], [])
    assert owners(r) == {ids[0]: ("rescuer", 1), ids[1]: ("rescuer", 1), ids[2]: ("gone-worker", 1)}


def test_claim_skips_ids_not_pending(r: redis.Redis) -> None:
    ids = read_by(r, "gone-worker", 2)
    r.xack(STREAM, GROUP, ids[0])
    result = actions.claim(r, STREAM, GROUP, [ids[0], ids[1], "9-9", "nonsense"], "rescuer")
    assert result.done == [ids[1]]
    assert result.skipped == [ids[0], "9-9", "nonsense"]
    assert result.detail == "2 not pending, 1 not an entry id"


def test_claim_chunks_over_1200_ids(r: redis.Redis) -> None:
    ids = read_by(r, "gone-worker", 1200)
    result = actions.claim(r, STREAM, GROUP, ids, "rescuer")
    assert len(result.done) == 1200 and not result.skipped
    assert {owner for owner, _ in owners(r).values()} == {"rescuer"}


# -- pending_ids / remove_consumer ------------------------------------------------------


def test_pending_ids_pages_through_one_consumer(r: redis.Redis) -> None:
    ids = read_by(r, "a", 5)
    xadd(r, event(99))
    r.xreadgroup(GROUP, "b", {STREAM: ">"})
    first = actions.pending_ids(r, STREAM, GROUP, consumer="a", count=3)
    second = actions.pending_ids(r, STREAM, GROUP, consumer="a", after=first[-1], count=3)
    assert (first, second) == (ids[:3], ids[3:])
    assert len(actions.pending_ids(r, STREAM, GROUP)) == 6


def test_remove_consumer_refused_with_pending_entries(r: redis.Redis) -> None:
    read_by(r, "gone-worker", 2)
    with pytest.raises(ActionRefused, match="has 2 pending entries"):
        actions.remove_consumer(r, STREAM, GROUP, "gone-worker")
    assert pending(r) == 2
    assert [c["name"] for c in r.xinfo_consumers(STREAM, GROUP)] == ["gone-worker"]


def test_remove_consumer_deletes_one_with_nothing_pending(r: redis.Redis) -> None:
    ids = read_by(r, "gone-worker", 2)
    r.xack(STREAM, GROUP, *ids)
    result = actions.remove_consumer(r, STREAM, GROUP, "gone-worker")
    assert (result.done, result.skipped) == (["gone-worker"], [])
    assert r.xinfo_consumers(STREAM, GROUP) == []


def test_remove_consumer_skips_an_unknown_consumer(r: redis.Redis) -> None:
    read_by(r, "gone-worker", 1)
    result = actions.remove_consumer(r, STREAM, GROUP, "nobody")
    assert (result.done, result.skipped, result.detail) == ([], ["nobody"], "no such consumer")


# -- retry_now ----------------------------------------------------------------------------


def test_retry_now_makes_entries_idle_keeping_owner_and_count(r: redis.Redis) -> None:
    ids = read_by(r, "slow-worker", 2)
    result = actions.retry_now(r, STREAM, GROUP, ids[:1], idle_ms=120_000, keys=KEYS)
    assert (result.done, result.skipped) == (ids[:1], [])
    rows = {row["message_id"]: row for row in r.xpending_range(STREAM, GROUP, "-", "+", 10)}
    assert rows[ids[0]]["time_since_delivered"] >= 120_000
    assert rows[ids[1]]["time_since_delivered"] < 60_000
    assert owners(r) == {ids[0]: ("slow-worker", 1), ids[1]: ("slow-worker", 1)}


def test_retry_now_skips_ids_not_pending(r: redis.Redis) -> None:
    ids = read_by(r, "slow-worker", 2)
    r.xack(STREAM, GROUP, ids[1])
    result = actions.retry_now(
        r, STREAM, GROUP, [ids[0], ids[1], "7-7"], idle_ms=120_000, keys=KEYS
    )
    assert (result.done, result.skipped) == ([ids[0]], [ids[1], "7-7"])


def test_retry_now_leaves_an_entry_an_agent_runs_and_says_where(
    r: redis.Redis, redis_url: str
) -> None:
    """Issue 32: not "Retry: 1 done". A reclaim would only find it busy and add a delivery."""
    ids = read_by(r, "busy-worker", 2)
    acquire(redis_url, hash_of(event(0)), f"busy-worker/{ids[0]}")
    result = actions.retry_now(r, STREAM, GROUP, ids, idle_ms=120_000, keys=KEYS)
    assert (result.done, result.skipped) == ([ids[1]], [ids[0]])
    assert result.detail == "running now on busy-worker: the gate decides, nothing re-run"
    rows = {row["message_id"]: row for row in r.xpending_range(STREAM, GROUP, "-", "+", 10)}
    assert rows[ids[0]]["time_since_delivered"] < 60_000
    assert rows[ids[0]]["times_delivered"] == 1


def test_retry_now_retries_an_entry_held_by_an_operator(r: redis.Redis) -> None:
    """A dead-letter hold is no agent: nothing runs the event, so the retry goes ahead."""
    ids = read_by(r, "slow-worker", 1)
    record = KEYS.gate(hash_of(event(0)))
    r.hset(record, mapping={"state": "running", "owner": "dead-letter:alice", "lease_until": 2**50})
    result = actions.retry_now(r, STREAM, GROUP, ids, idle_ms=120_000, keys=KEYS)
    assert (result.done, result.detail) == (ids, "")


def test_retry_now_lets_a_live_worker_reclaim_at_once(
    r: redis.Redis, redis_url: str, config: EngineConfig
) -> None:
    """Without it the entry would wait out a claim idle time of a minute."""
    ids = read_by(r, "stuck-worker", 3)
    slow = replace(config, claim_idle_ms=60_000, lease_ms=30_000)
    actions.retry_now(r, STREAM, GROUP, ids, idle_ms=slow.claim_idle_ms + 1, keys=KEYS)
    runs: Counter[str] = Counter()
    run_burst(redis_url, slow, counting_registry(runs), timeout_s=10)
    assert sorted(runs.values()) == [1, 1, 1]
    assert pending(r) == 0


def test_retry_now_chunks_over_1200_ids(r: redis.Redis) -> None:
    ids = read_by(r, "slow-worker", 1200)
    result = actions.retry_now(r, STREAM, GROUP, ids, idle_ms=120_000, keys=KEYS)
    assert len(result.done) == 1200
    rows = r.xpending_range(STREAM, GROUP, "-", "+", 2000)
    assert min(row["time_since_delivered"] for row in rows) >= 120_000


# -- dead_letter --------------------------------------------------------------------------


def test_dead_letter_moves_entries_with_the_engines_fields(r: redis.Redis) -> None:
    ids = read_by(r, "stuck-worker", 2)
    result = actions.dead_letter(r, STREAM, GROUP, ids[:1], "poison, by hand", "alice", keys=KEYS)
    assert (result.done, result.skipped) == (ids[:1], [])
    [(_, fields)] = r.xrange(DEAD)
    assert list(fields) == [
        "event", "stream", "group", "entry_id", "deliveries", "reason", "error", "dead_at", "by",
    ]  # fmt: skip
    assert json.loads(fields["event"]) == event(0)
    assert (fields["entry_id"], fields["deliveries"], fields["by"]) == (ids[0], "1", "alice")
    assert (fields["reason"], fields["error"], fields["group"]) == ("poison, by hand", "", GROUP)
    assert pending(r) == 1
    assert counters(r)["dead_lettered"] == 1


def test_dead_letter_skips_entries_not_pending(r: redis.Redis) -> None:
    ids = read_by(r, "stuck-worker", 2)
    r.xack(STREAM, GROUP, ids[0])
    result = actions.dead_letter(r, STREAM, GROUP, [*ids, "1-1"], "x", "alice", keys=KEYS)
    assert (result.done, result.skipped) == ([ids[1]], [ids[0], "1-1"])
    assert result.detail == "2 not pending"
    assert r.xlen(DEAD) == 1


def test_dead_letter_acks_a_pending_entry_whose_payload_was_deleted(r: redis.Redis) -> None:
    ids = read_by(r, "stuck-worker", 1)
    r.xdel(STREAM, ids[0])
    result = actions.dead_letter(r, STREAM, GROUP, ids, "x", "alice", keys=KEYS)
    assert (result.done, result.skipped) == ([], ids)
    assert result.detail == "1 payload deleted (acked)"
    assert pending(r) == 0 and r.xlen(DEAD) == 0
    assert counters(r)["deleted"] == 1


def test_dead_letter_skips_an_event_an_agent_is_running(r: redis.Redis, redis_url: str) -> None:
    ids = read_by(r, "busy-worker", 1)
    acquire(redis_url, hash_of(event(0)), f"busy-worker/{ids[0]}")
    result = actions.dead_letter(r, STREAM, GROUP, ids, "x", "alice", keys=KEYS)
    assert (result.done, result.detail) == ([], "1 running now")
    assert pending(r) == 1 and r.xlen(DEAD) == 0


def test_dead_letter_skips_an_event_already_done(r: redis.Redis) -> None:
    ids = read_by(r, "slow-acker", 1)
    r.hset(KEYS.gate(hash_of(event(0))), mapping={"state": "done", "token": 1})
    result = actions.dead_letter(r, STREAM, GROUP, ids, "x", "alice", keys=KEYS)
    assert (result.done, result.detail) == ([], "1 already done (will be acked as a duplicate)")
    assert pending(r) == 1


def test_dead_letter_holds_the_gate_against_a_worker_that_read_the_entry(
    r: redis.Redis, redis_url: str
) -> None:
    """A worker that read the entry just before finds its event busy and does not run it."""
    ids = read_by(r, "reader", 1)
    actions.dead_letter(r, STREAM, GROUP, ids, "x", "alice", hold_ms=5_000, keys=KEYS)
    record = KEYS.gate(hash_of(event(0)))
    assert r.hget(record, "owner") == "dead-letter:alice"
    assert 0 < r.pttl(record) <= 5_000
    assert acquire(redis_url, hash_of(event(0)), f"reader/{ids[0]}") is Outcome.BUSY


def test_dead_letter_of_duplicate_entries_moves_both(r: redis.Redis) -> None:
    ids = xadd_many(r, STREAM, [json.dumps(event(0)), json.dumps(event(0))])
    r.xgroup_create(STREAM, GROUP, id="0")
    r.xreadgroup(GROUP, "w", {STREAM: ">"})
    result = actions.dead_letter(r, STREAM, GROUP, ids, "x", "alice", keys=KEYS)
    assert result.done == ids


def test_dead_letter_then_redrive_runs_the_event_once(
    r: redis.Redis, redis_url: str, config: EngineConfig
) -> None:
    ids = read_by(r, "stuck-worker", 1)
    actions.dead_letter(r, STREAM, GROUP, ids, "x", "alice", hold_ms=300, keys=KEYS)
    [(dead_id, _)] = r.xrange(DEAD)
    actions.redrive(r, STREAM, [dead_id], "alice")
    runs: Counter[str] = Counter()
    run_burst(redis_url, config, counting_registry(runs))
    assert list(runs.values()) == [1]
    assert AgentRun.objects.get().status == RunStatus.SUCCEEDED
    assert pending(r) == 0


def test_dead_letter_chunks_over_1200_ids(r: redis.Redis) -> None:
    ids = read_by(r, "stuck-worker", 1200)
    result = actions.dead_letter(r, STREAM, GROUP, ids, "bulk", "alice", keys=KEYS)
    assert len(result.done) == 1200
    assert r.xlen(DEAD) == 1200 and pending(r) == 0


# -- scan_dead ----------------------------------------------------------------------------


def dead_letters(r: redis.Redis, rows: list[tuple[str, str, str]]) -> None:
    """``(dead id, event type, reason)`` rows in the dead stream."""
    for dead_id, kind, reason in rows:
        r.xadd(DEAD, {"event": json.dumps({"type": kind, "data": {}}), "reason": reason}, dead_id)


def test_scan_dead_filters_by_type_and_reason(r: redis.Redis) -> None:
    dead_letters(
        r,
        [("1-0", "a", "max-deliveries"), ("2-0", "b", "max-deliveries"), ("3-0", "a", "manual")],
    )
    r.xadd(DEAD, {"event": "not json", "reason": "decode-error"}, "4-0")
    matches, cursor = actions.scan_dead(r, STREAM, DeadFilter(type="a", reason="max-deliveries"))
    assert [i for i, _ in matches] == ["1-0"] and cursor is None
    assert len(actions.scan_dead(r, STREAM, DeadFilter())[0]) == 4
    assert [i for i, _ in actions.scan_dead(r, STREAM, DeadFilter(type="a"))[0]] == ["1-0", "3-0"]


def test_scan_dead_cursor_is_the_last_id_read_even_unmatched(r: redis.Redis) -> None:
    dead_letters(r, [(f"{n}-0", "a" if n == 4 else "b", "r") for n in range(1, 6)])
    f = DeadFilter(type="a")
    first, cursor = actions.scan_dead(r, STREAM, f, count=2)
    assert (first, cursor) == ([], "2-0")
    second, cursor = actions.scan_dead(r, STREAM, f, after=cursor, count=2)
    assert ([i for i, _ in second], cursor) == (["4-0"], "4-0")
    third, cursor = actions.scan_dead(r, STREAM, f, after=cursor, count=2)
    assert (third, cursor) == ([], None)


def test_scan_dead_time_window(r: redis.Redis) -> None:
    dead_letters(r, [(i, "a", "r") for i in ("1000-0", "2000-0", "2000-1", "3000-0")])
    f = DeadFilter(since_ms=2000, until_ms=3000)
    matches, cursor = actions.scan_dead(r, STREAM, f)
    assert [i for i, _ in matches] == ["2000-0", "2000-1"] and cursor is None
    assert f.matches("2000-0", {"event": "{}"}) and not f.matches("3000-0", {"event": "{}"})
    later = actions.scan_dead(r, STREAM, f, after="1000-0")[0]
    assert [i for i, _ in later] == ["2000-0", "2000-1"]


# -- redrive / purge ----------------------------------------------------------------------


def test_redrive_publishes_the_event_with_retry_of_and_deletes_the_letter(r: redis.Redis) -> None:
    ids = read_by(r, "w", 1)
    actions.dead_letter(r, STREAM, GROUP, ids, "x", "alice", keys=KEYS)
    [(dead_id, letter)] = r.xrange(DEAD)
    result = actions.redrive(r, STREAM, [dead_id], "bob")
    assert (result.done, result.skipped) == ([dead_id], [])
    [(new_id, fields)] = r.xrange(STREAM, "(" + ids[0])
    assert result.new_ids == [new_id]
    # For the letter's group alone: another agent's run of the event is not redriven.
    assert fields == {"event": letter["event"], "retry_of": dead_id, "by": "bob", "for": GROUP}
    assert r.xlen(DEAD) == 0


def test_redrive_skips_letters_already_gone(r: redis.Redis) -> None:
    dead_letters(r, [("1-0", "a", "r")])
    assert actions.redrive(r, STREAM, ["1-0"], "alice").done == ["1-0"]
    again = actions.redrive(r, STREAM, ["1-0", "2-0"], "bob")
    assert (again.done, again.skipped, again.new_ids) == ([], ["1-0", "2-0"], [])
    assert again.detail == "2 already gone (redriven or purged)"
    assert r.xlen(STREAM) == 1


def test_redrive_chunks_over_1200_letters(r: redis.Redis) -> None:
    dead_letters(r, [(f"{n}-0", "a", "r") for n in range(1, 1201)])
    result = actions.redrive(r, STREAM, [f"{n}-0" for n in range(1, 1201)], "alice")
    assert len(result.done) == len(set(result.new_ids)) == 1200
    assert (r.xlen(STREAM), r.xlen(DEAD)) == (1200, 0)


def test_redrive_of_an_event_that_already_ran_is_a_gate_hit(
    r: redis.Redis, redis_url: str, config: EngineConfig
) -> None:
    xadd(r, event(1))
    runs: Counter[str] = Counter()
    registry = counting_registry(runs)
    run_burst(redis_url, config, registry)
    r.xadd(DEAD, {"event": json.dumps(event(1)), "reason": "manual"}, "5-0")
    actions.redrive(r, STREAM, ["5-0"], "alice")
    run_burst(redis_url, config, registry)
    assert list(runs.values()) == [1]
    assert counters(r)["idempotency_hits"] == 1


def test_purge_deletes_letters_and_skips_gone(r: redis.Redis) -> None:
    dead_letters(r, [("1-0", "a", "r"), ("2-0", "a", "r")])
    result = actions.purge(r, STREAM, ["1-0", "3-0", "x"])
    assert (result.done, result.skipped) == (["1-0"], ["3-0", "x"])
    assert [i for i, _ in r.xrange(DEAD)] == ["2-0"]


# -- the gate: preview, force re-run ------------------------------------------------------


def test_gate_done_per_raw_event(r: redis.Redis) -> None:
    r.hset(KEYS.gate(hash_of(event(1))), "state", "done")
    r.hset(KEYS.gate(hash_of(event(2))), "state", "running")
    raws = [json.dumps(event(1)), json.dumps(event(2)), json.dumps(event(3)), "{bad", ""]
    assert actions.gate_done(r, KEYS, raws) == [True, False, False, False, False]


def test_clear_gate_releases_a_done_record_keeping_its_token(r: redis.Redis) -> None:
    record = KEYS.gate("h1")
    r.hset(record, mapping={"state": "done", "token": 3})
    assert actions.clear_gate(r, KEYS, "h1") is True
    assert r.hmget(record, "state", "token") == ["released", "3"]


def test_clear_gate_without_a_record_is_false(r: redis.Redis) -> None:
    assert actions.clear_gate(r, KEYS, "nothing") is False


def test_clear_gate_refused_while_an_agent_runs(r: redis.Redis, redis_url: str) -> None:
    assert acquire(redis_url, "h1", "w/1-0") is Outcome.ACQUIRED
    with pytest.raises(ActionRefused, match="running now"):
        actions.clear_gate(r, KEYS, "h1")
    assert r.hget(KEYS.gate("h1"), "state") == "running"


def test_republish_adds_the_event_with_rerun_of(r: redis.Redis) -> None:
    raw = json.dumps(event(1))
    new_id = actions.republish(r, STREAM, raw, "1-0")
    assert r.xrange(STREAM) == [(new_id, {"event": raw, "rerun_of": "1-0"})]
