"""Errors grouped (issue 32): dead letters join their fingerprint's group as they are
written, group actions run as tracked bulk jobs, and the groups follow redrives and purges.
Real Redis, real database, the engine's own dead-letter path."""

from __future__ import annotations

from dataclasses import replace

import pytest
import redis

from tests.support.entries import dead_letters, pending_entries
from tests.support.error_letters import STREAM, card_declined, letter, order_missing, write_letters
from workers.core.keys import Keys, dead_stream
from workers.models import AuditRecord, BulkJob, Door, JobStatus
from workers.operations import Actor, jobs, purge, purge_group, redrive, retry_group
from workers.redis.error_groups import (
    ErrorGroup,
    backfill,
    member_ids,
    read_group,
    read_groups,
    unfingerprinted,
)

pytestmark = pytest.mark.django_db

ALICE = Actor("alice", Door.CONSOLE)
KEYS = Keys()


def two_groups(redis_url: str) -> tuple[list[str], list[str]]:
    """Five look-alike KeyErrors (other orders, other lines) and three ValueErrors."""
    keyerrors = [letter(i, order_missing(f"ord-{i}", padding=i)) for i in range(5)]
    declined = [letter(10 + i, card_declined(4000 + i), kind="shop.pay") for i in range(3)]
    ids = write_letters(redis_url, [*keyerrors, *declined])
    return ids[:5], ids[5:]


def by_kind(r: redis.Redis) -> dict[str, ErrorGroup]:
    return {g.kind: g for g in read_groups(r, KEYS, [STREAM])}


def run_job(r: redis.Redis, job_id: int) -> BulkJob:
    return jobs.run(job_id, r, KEYS, "test-runner")


def test_error_groups_written_with_the_letters(r: redis.Redis, redis_url: str) -> None:
    keyerror_ids, _ = two_groups(redis_url)
    groups = read_groups(r, KEYS, [STREAM])
    assert [(g.kind, g.count) for g in groups] == [("KeyError", 5), ("ValueError", 3)]
    keyerror = groups[0]
    assert keyerror.message == "<str>"
    assert keyerror.frame == "agents.handler"
    assert keyerror.types == {"shop.order": 5} and keyerror.groups == {"agents": 5}
    assert keyerror.sample == keyerror_ids[-1] and "ord-4" in keyerror.error
    assert keyerror.first_ms == int(keyerror_ids[0].split("-")[0])
    assert member_ids(r, KEYS, STREAM, keyerror.fingerprint) == keyerror_ids[::-1]
    assert (
        r.xrange(dead_stream(STREAM), keyerror_ids[0], keyerror_ids[0])[0][1]["fingerprint"]
        == keyerror.fingerprint
    )
    assert unfingerprinted(r, [STREAM], read_groups(r, KEYS, [STREAM])) == 0


def test_retrying_a_group_retries_exactly_its_members(r: redis.Redis, redis_url: str) -> None:
    keyerror_ids, declined_ids = two_groups(redis_url)
    group = by_kind(r)["KeyError"]
    outcome = retry_group(ALICE, STREAM, group.fingerprint, client=r, keys=KEYS)
    assert outcome.outcome == "queued" and outcome.job_id
    job = run_job(r, outcome.job_id)
    assert (job.status, job.done, job.skipped) == (JobStatus.DONE, 5, 0)
    assert sorted(f["retry_of"] for _, f in r.xrange(STREAM)) == sorted(keyerror_ids)
    left = [str(i) for i, _ in r.xrange(dead_stream(STREAM))]
    assert left == declined_ids
    assert list(by_kind(r)) == ["ValueError"]
    assert r.exists(KEYS.error_members(STREAM, group.fingerprint)) == 0
    record = AuditRecord.objects.get(job=job)
    assert (record.action, record.outcome, record.count) == ("redrive", "ok", 5)
    assert record.target["fingerprint"] == group.fingerprint


def test_purging_a_group_deletes_exactly_its_members(r: redis.Redis, redis_url: str) -> None:
    keyerror_ids, _ = two_groups(redis_url)
    group = by_kind(r)["ValueError"]
    outcome = purge_group(
        ALICE,
        STREAM,
        group.fingerprint,
        reason="card test data",
        client=r,
        keys=KEYS,
    )
    run_job(r, outcome.job_id or 0)
    assert [str(i) for i, _ in r.xrange(dead_stream(STREAM))] == keyerror_ids
    assert r.xlen(STREAM) == 0
    assert list(by_kind(r)) == ["KeyError"]


def test_a_redrive_by_id_takes_the_letter_out_of_its_group(r: redis.Redis, redis_url: str) -> None:
    keyerror_ids, _ = two_groups(redis_url)
    redrive(ALICE, STREAM, [keyerror_ids[-1]], client=r, keys=KEYS)
    group = by_kind(r)["KeyError"]
    assert group.count == 4 and group.seen == 5
    assert group.sample == keyerror_ids[-2]
    assert member_ids(r, KEYS, STREAM, group.fingerprint) == keyerror_ids[-2::-1]


def test_a_group_letter_that_fails_again_joins_anew(r: redis.Redis, redis_url: str) -> None:
    two_groups(redis_url)
    fp = by_kind(r)["KeyError"].fingerprint
    run_job(r, retry_group(ALICE, STREAM, fp, client=r, keys=KEYS).job_id or 0)
    again = write_letters(redis_url, [letter(99, order_missing("ord-99", padding=7))])
    group = read_group(r, KEYS, STREAM, fp)
    assert group is not None and group.count == 1 and group.sample == again[0]


def test_an_empty_group_is_a_noop(r: redis.Redis) -> None:
    outcome = retry_group(ALICE, STREAM, "0123456789abcdef", client=r, keys=KEYS)
    assert outcome.outcome == "noop" and outcome.job_id is None
    assert AuditRecord.objects.get().target == {"fingerprint": "0123456789abcdef"}


def test_backfill_groups_letters_from_before_fingerprints(r: redis.Redis) -> None:
    old = dead_letters(r, 1200)  # no fingerprint field: written as before this change
    assert unfingerprinted(r, [STREAM], read_groups(r, KEYS, [STREAM])) == 1200
    added, cursor, batches = 0, "-", 0
    while cursor is not None:
        n, cursor = backfill(r, KEYS, STREAM, cursor, batch=500)
        added, batches = added + n, batches + 1
    assert (added, batches) == (1200, 3)
    [group] = read_groups(r, KEYS, [STREAM])
    assert (group.kind, group.message, group.count) == ("reason:max-deliveries", "boom", 1200)
    assert backfill(r, KEYS, STREAM)[0] == 0  # again: nothing added twice
    purge(ALICE, STREAM, old[:2], reason="old", client=r, keys=KEYS)
    assert read_groups(r, KEYS, [STREAM])[0].count == 1198
    assert r.hlen(KEYS.error_backfilled(STREAM)) == 1198


def test_members_newest_first_within_one_millisecond(r: redis.Redis, redis_url: str) -> None:
    # One pipeline: many letters share a millisecond (ids ...-9, ...-10, ...-11).
    ids = write_letters(redis_url, [letter(i, order_missing(f"o{i}")) for i in range(30)])
    [group] = read_groups(r, KEYS, [STREAM])
    assert member_ids(r, KEYS, STREAM, group.fingerprint) == ids[::-1]
    assert group.sample == ids[-1]
    purge(ALICE, STREAM, [ids[-1]], reason="x", client=r, keys=KEYS)
    assert read_groups(r, KEYS, [STREAM])[0].sample == ids[-2]


def test_letters_dead_lettered_by_hand_join_a_group_by_their_reason(r: redis.Redis) -> None:
    from tests.support.entries import GROUP, pending_entries
    from workers.operations import dead_letter

    ids = pending_entries(r, 3)
    dead_letter(ALICE, STREAM, GROUP, ids, "bad payload 42", client=r, keys=KEYS)
    [group] = read_groups(r, KEYS, [STREAM])
    assert (group.kind, group.message, group.count) == ("reason:bad payload 42", "", 3)
    assert group.error == "bad payload 42" and group.groups == {GROUP: 3}
    assert unfingerprinted(r, [STREAM], [group]) == 0
    purge(ALICE, STREAM, [group.sample], reason="x", client=r, keys=KEYS)
    assert read_groups(r, KEYS, [STREAM])[0].count == 2


def test_a_groups_job_drops_letters_gone_by_other_means(r: redis.Redis, redis_url: str) -> None:
    keyerror_ids, _ = two_groups(redis_url)
    r.xdel(dead_stream(STREAM), *keyerror_ids[:2])  # by hand: the group still counts them
    fp = by_kind(r)["KeyError"].fingerprint
    assert read_group(r, KEYS, STREAM, fp).count == 5  # type: ignore[union-attr]
    job = run_job(r, retry_group(ALICE, STREAM, fp, client=r, keys=KEYS).job_id or 0)
    assert (job.done, job.skipped) == (3, 2)
    assert read_group(r, KEYS, STREAM, fp) is None
    assert r.exists(KEYS.error_members(STREAM, fp)) == 0


def test_a_letter_with_any_text_joins_its_group(r: redis.Redis, redis_url: str) -> None:
    # Non-ASCII, a character outside the BMP and a lone surrogate (an agent's message built
    # from a file name): the letter and its group are written all the same.
    texts = ["commande introuvable: «ord-1» 😀", "bad name \udcff 7"]
    errors = [f"Traceback (most recent call last):\nValueError: {t}" for t in texts]
    ids = write_letters(redis_url, [letter(n, e) for n, e in enumerate(errors)])
    assert len(ids) == 2
    groups = {g.message: g for g in read_groups(r, KEYS, [STREAM])}
    assert groups["commande introuvable: «ord-<num>» 😀"].error.endswith("😀")
    assert groups["bad name \\udcff <num>"].count == 1


def test_a_broken_group_never_keeps_a_letter_from_being_written(
    r: redis.Redis, redis_url: str
) -> None:
    keyerror_ids, _ = two_groups(redis_url)
    fp = by_kind(r)["KeyError"].fingerprint
    r.hset(KEYS.error_groups(STREAM), fp, "not JSON")  # a record someone else wrote
    [pending] = pending_entries(r, 1)
    again = write_letters(redis_url, [replace(letter(50, order_missing("o")), entry_id=pending)])
    # The letter written once and its entry acked: not left pending, to be dead-lettered again.
    assert len(again) == 1 and r.xpending(STREAM, "agents")["pending"] == 0
    r.xtrim(STREAM, maxlen=0)
    redrive(ALICE, STREAM, [again[0], keyerror_ids[0]], client=r, keys=KEYS)
    assert r.xlen(STREAM) == 2  # redriven all the same
    r.delete(KEYS.error_groups(STREAM))
    r.set(KEYS.error_groups(STREAM), "a string")  # a key of another type
    assert len(write_letters(redis_url, [letter(51, card_declined(1))])) == 1
    purge(ALICE, STREAM, keyerror_ids[1:], reason="x", client=r, keys=KEYS)
    assert r.xlen(dead_stream(STREAM)) == 4  # 3 ValueErrors + 1 new, 4 KeyErrors purged
