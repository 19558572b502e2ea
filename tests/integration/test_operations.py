"""Operator actions (workers/operations/__init__.py): one audit record each, whatever happens."""

from __future__ import annotations

import json

import pytest
import redis

from tests.support.entries import (
    ALICE,
    DEAD,
    GROUP,
    KEYS,
    OUTCOME_KEYS,
    STREAM,
    dead_letters,
    event,
    live_consumer,
    only_record,
    pending_entries,
)
from workers import operations
from workers.core.errors import ActionRefused, InvalidAction, NoSuchGroup
from workers.core.events import decode_envelope, event_hash
from workers.models import AgentRun, AuditRecord, BulkJob, Door, RunStatus
from workers.operations import Actor
from workers.operations.actions import DeadFilter

pytestmark = pytest.mark.django_db


def owners(r: redis.Redis, ids: list[str]) -> set[str]:
    rows = r.xpending_range(STREAM, GROUP, min="-", max="+", count=len(ids) + 10)
    return {row["consumer"] for row in rows if row["message_id"] in ids}


# -- claim ---------------------------------------------------------------------------------


def test_claim_moves_entries_and_writes_one_audit_record(r: redis.Redis) -> None:
    ids = pending_entries(r, 3)
    live_consumer(r, "new")
    out = operations.claim(ALICE, STREAM, GROUP, ids, "new", client=r, keys=KEYS)
    assert (out.outcome, out.count, out.skipped, list(out.ids)) == ("ok", 3, 0, ids)
    assert owners(r, ids) == {"new"}
    record = only_record()
    assert (record.actor, record.door, record.action, record.outcome) == (
        "alice",
        "console",
        "claim",
        "ok",
    )
    assert (record.stream, record.group, record.target, record.count) == (
        STREAM,
        GROUP,
        {"ids": ids},
        3,
    )
    assert out.audit_id == record.pk


def test_claim_skips_entries_no_longer_pending(r: redis.Redis) -> None:
    ids = pending_entries(r, 3)
    live_consumer(r, "new")
    r.xack(STREAM, GROUP, ids[0])
    out = operations.claim(ALICE, STREAM, GROUP, ids, "new", client=r, keys=KEYS)
    assert (out.count, out.skipped) == (2, 1)
    assert only_record().skipped == 1


def test_claim_dry_run_changes_nothing_and_counts_what_is_pending(r: redis.Redis) -> None:
    ids = pending_entries(r, 3)
    live_consumer(r, "new")
    r.xack(STREAM, GROUP, ids[0])
    out = operations.claim(ALICE, STREAM, GROUP, ids, "new", dry_run=True, client=r, keys=KEYS)
    assert (out.outcome, out.count, out.skipped, list(out.ids)) == ("dry-run", 2, 1, ids[1:])
    assert owners(r, ids) == {"old"}
    assert only_record().outcome == "dry-run"


def test_claim_rejects_a_malformed_id_without_a_record(r: redis.Redis) -> None:
    with pytest.raises(InvalidAction) as caught:
        operations.claim(ALICE, STREAM, GROUP, ["1-0", "nope"], "new", client=r, keys=KEYS)
    assert caught.value.field == "ids"
    assert not AuditRecord.objects.exists()


def test_claim_on_a_missing_group_is_refused_in_words(r: redis.Redis) -> None:
    pending_entries(r, 1)
    message = f"no group 'no-such-group' on stream '{STREAM}'"
    with pytest.raises(NoSuchGroup) as caught:
        operations.claim(ALICE, STREAM, "no-such-group", ["1-0"], "new", client=r, keys=KEYS)
    assert str(caught.value) == message
    record = only_record()
    assert (record.outcome, record.count, record.detail) == ("refused", 0, message)


def test_claim_all_moves_every_entry_of_a_consumer(r: redis.Redis) -> None:
    ids = pending_entries(r, 5, consumer="dead-worker")
    live_consumer(r, "live")
    out = operations.claim_all(ALICE, STREAM, GROUP, "dead-worker", "live", client=r, keys=KEYS)
    assert (out.outcome, out.count, out.job_id) == ("ok", 5, None)
    assert owners(r, ids) == {"live"}
    assert only_record().target == {"consumer": "dead-worker", "to": "live"}


def test_claim_all_over_a_thousand_entries_queues_a_job(r: redis.Redis) -> None:
    pending_entries(r, 1001, consumer="dead-worker")
    live_consumer(r, "live")
    out = operations.claim_all(ALICE, STREAM, GROUP, "dead-worker", "live", client=r, keys=KEYS)
    job = BulkJob.objects.get()
    assert (out.outcome, out.job_id, job.action, job.total) == ("queued", job.pk, "claim-all", 1001)
    assert only_record().job == job


def test_claim_all_dry_run_counts_the_consumers_entries(r: redis.Redis) -> None:
    pending_entries(r, 4, consumer="dead-worker")
    live_consumer(r, "live")
    out = operations.claim_all(
        ALICE, STREAM, GROUP, "dead-worker", "live", True, client=r, keys=KEYS
    )
    assert (out.outcome, out.count, len(out.ids)) == ("dry-run", 4, 4)


# -- remove consumer, retry, dead-letter ---------------------------------------------------


def test_remove_consumer_with_pending_entries_is_refused_and_recorded(r: redis.Redis) -> None:
    pending_entries(r, 1, consumer="busy")
    with pytest.raises(ActionRefused, match="pending"):
        operations.remove_consumer(ALICE, STREAM, GROUP, "busy", client=r, keys=KEYS)
    record = only_record()
    assert (record.action, record.outcome) == ("remove-consumer", "refused")
    assert "pending" in record.detail


def test_remove_consumer_without_pending_entries_deletes_it(r: redis.Redis) -> None:
    ids = pending_entries(r, 1, consumer="idle")
    r.xack(STREAM, GROUP, *ids)
    out = operations.remove_consumer(ALICE, STREAM, GROUP, "idle", client=r, keys=KEYS)
    assert (out.outcome, out.count) == ("ok", 1)
    assert not r.xinfo_consumers(STREAM, GROUP)


def test_retry_now_makes_entries_idle_past_the_claim_idle_time(r: redis.Redis) -> None:
    ids = pending_entries(r, 2)
    out = operations.retry_now(ALICE, STREAM, GROUP, ids, client=r, claim_idle_ms=5000, keys=KEYS)
    assert (out.outcome, out.count) == ("ok", 2)
    rows = r.xpending_range(STREAM, GROUP, min="-", max="+", count=10)
    assert all(row["time_since_delivered"] >= 6000 for row in rows)
    assert {row["consumer"] for row in rows} == {"old"}  # the owner stays


def test_dead_letter_requires_a_reason(r: redis.Redis) -> None:
    ids = pending_entries(r, 1)
    with pytest.raises(InvalidAction) as caught:
        operations.dead_letter(ALICE, STREAM, GROUP, ids, "  ", client=r, keys=KEYS)
    assert caught.value.field == "reason"
    assert not AuditRecord.objects.exists()


def test_dead_letter_moves_entries_with_the_reason(r: redis.Redis) -> None:
    ids = pending_entries(r, 2)
    out = operations.dead_letter(ALICE, STREAM, GROUP, ids, "poison", client=r, keys=KEYS)
    assert (out.outcome, out.count) == ("ok", 2)
    letters = r.xrange(DEAD)
    assert [f["entry_id"] for _, f in letters] == ids
    assert {f["reason"] for _, f in letters} == {"poison"}
    assert only_record().reason == "poison"


def test_dead_letter_over_a_thousand_ids_queues_a_job(r: redis.Redis) -> None:
    ids = pending_entries(r, 1001)
    out = operations.dead_letter(ALICE, STREAM, GROUP, ids, "poison", client=r, keys=KEYS)
    job = BulkJob.objects.get()
    assert (out.outcome, job.action, job.total, job.reason) == (
        "queued",
        "dead-letter",
        1001,
        "poison",
    )
    assert r.xlen(DEAD) == 0
    assert len(only_record().target["ids"]) == 1000


# -- redrive, preview, purge ---------------------------------------------------------------


def test_redrive_ids_republishes_and_deletes_the_letters(r: redis.Redis) -> None:
    dead = dead_letters(r, 2)
    out = operations.redrive(ALICE, STREAM, ids=dead, client=r, keys=KEYS)
    assert (out.outcome, out.count, len(out.new_ids)) == ("ok", 2, 2)
    assert r.xlen(DEAD) == 0
    assert [f["retry_of"] for _, f in r.xrange(STREAM)] == dead


def test_redrive_a_letter_already_gone_is_skipped(r: redis.Redis) -> None:
    dead = dead_letters(r, 2)
    operations.redrive(ALICE, STREAM, ids=dead[:1], client=r, keys=KEYS)
    out = operations.redrive(ALICE, STREAM, ids=dead, client=r, keys=KEYS)
    assert (out.count, out.skipped) == (1, 1)
    assert r.xlen(STREAM) == 2


def test_redrive_with_a_filter_queues_a_job_bounded_to_now(r: redis.Redis) -> None:
    dead_letters(r, 3)
    out = operations.redrive(
        ALICE, STREAM, filter=DeadFilter(type="demo.echo"), client=r, keys=KEYS
    )
    job = BulkJob.objects.get()
    assert (out.outcome, out.job_id, job.action) == ("queued", job.pk, "redrive")
    assert job.params["filter"]["type"] == "demo.echo"
    assert job.params["filter"]["until_ms"] > 0  # letters dead-lettered later are not taken
    assert only_record().target == {"filter": job.params["filter"]}
    assert r.xlen(DEAD) == 3  # nothing done until a runner runs it


def test_redrive_given_ids_and_a_filter_is_invalid(r: redis.Redis) -> None:
    with pytest.raises(InvalidAction) as caught:
        operations.redrive(ALICE, STREAM, ids=["1-0"], filter=DeadFilter(), client=r, keys=KEYS)
    assert caught.value.field == "ids"


def test_redrive_filter_dry_run_counts_matches_and_changes_nothing(r: redis.Redis) -> None:
    dead_letters(r, 3, kind="demo.echo")
    dead_letters(r, 2, kind="demo.fail", first=3)
    out = operations.redrive(
        ALICE, STREAM, filter=DeadFilter(type="demo.fail"), dry_run=True, client=r, keys=KEYS
    )
    assert (out.outcome, out.count, out.job_id) == ("dry-run", 2, None)
    assert "2 dead letters match" in out.detail
    assert r.xlen(DEAD) == 5 and not BulkJob.objects.exists()


def test_preview_counts_letters_whose_event_already_ran(r: redis.Redis) -> None:
    dead_letters(r, 3)
    done_hash = event_hash(decode_envelope(event(0)))
    r.hset(KEYS.gate(done_hash), mapping={"state": "done"})
    AgentRun.objects.create(
        event_hash=event_hash(decode_envelope(event(1))),
        event_type="demo.echo",
        stream=STREAM,
        entry_id="2-0",
        status=RunStatus.SUCCEEDED,
        consumer="w1",
    )
    preview = operations.preview_redrive(STREAM, DeadFilter(), client=r, keys=KEYS)
    assert preview == operations.Preview(matching=3, already_done=2, scanned=3, complete=True)


def test_preview_stops_after_its_bound_and_says_so(r: redis.Redis) -> None:
    dead_letters(r, 30)
    preview = operations.preview_redrive(
        STREAM, DeadFilter(reason="max-deliveries"), client=r, keys=KEYS, max_scanned=10
    )
    assert (preview.matching, preview.scanned, preview.complete) == (10, 10, False)


def test_purge_requires_a_reason(r: redis.Redis) -> None:
    dead = dead_letters(r, 1)
    with pytest.raises(InvalidAction) as caught:
        operations.purge(ALICE, STREAM, ids=dead, reason="", client=r, keys=KEYS)
    assert caught.value.field == "reason"


def test_purge_deletes_letters_and_records_the_reason(r: redis.Redis) -> None:
    dead = dead_letters(r, 2)
    out = operations.purge(ALICE, STREAM, ids=dead, reason="test data", client=r, keys=KEYS)
    assert (out.outcome, out.count) == ("ok", 2)
    assert r.xlen(DEAD) == 0 and r.xlen(STREAM) == 0
    assert (only_record().action, only_record().reason) == ("purge", "test data")


def test_purge_dry_run_counts_letters_still_there(r: redis.Redis) -> None:
    dead = dead_letters(r, 3)
    r.xdel(DEAD, dead[0])
    out = operations.purge(ALICE, STREAM, ids=dead, reason="x", dry_run=True, client=r, keys=KEYS)
    assert (out.outcome, out.count, out.skipped) == ("dry-run", 2, 1)
    assert r.xlen(DEAD) == 2


# -- pause, resume -------------------------------------------------------------------------


def test_pause_sets_the_flag_and_resume_clears_it(r: redis.Redis) -> None:
    paused = operations.pause(ALICE, STREAM, GROUP, client=r, keys=KEYS)
    assert (paused.outcome, paused.count) == ("ok", 1)
    assert r.get(KEYS.paused(STREAM, GROUP)).startswith("alice")
    resumed = operations.resume(ALICE, STREAM, GROUP, client=r, keys=KEYS)
    assert (resumed.outcome, resumed.count) == ("ok", 1)
    assert not r.exists(KEYS.paused(STREAM, GROUP))
    assert [a.action for a in AuditRecord.objects.order_by("pk")] == ["pause", "resume"]


def test_pause_of_a_paused_group_says_who_paused_it(r: redis.Redis) -> None:
    operations.pause(Actor("bob", Door.API), STREAM, GROUP, client=r, keys=KEYS)
    again = operations.pause(ALICE, STREAM, GROUP, client=r, keys=KEYS)
    assert (again.count, again.detail.startswith("already paused by bob")) == (0, True)


def test_outcome_as_dict_is_json_ready(r: redis.Redis) -> None:
    dead = dead_letters(r, 1)
    out = operations.redrive(ALICE, STREAM, ids=dead, client=r, keys=KEYS)
    data = json.loads(json.dumps(out.as_dict()))
    assert set(data) == OUTCOME_KEYS
    assert (data["ids"], data["job_id"]) == (dead, None)
