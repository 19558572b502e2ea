"""The operators' side of waiting runs against a real Redis and database: the waits read a
page at a time, and an answer published as the event the run waits for, audited."""

from __future__ import annotations

import json

import pytest
import redis

from tests.support.waits import ANSWER_TYPE, engine_reads, run_hash, sleep, wait_for
from workers import operations
from workers.core.errors import ActionRefused, InvalidAction
from workers.core.events import decode_envelope
from workers.core.keys import DEFAULT_STREAM, Keys
from workers.models import AuditRecord, Door
from workers.operations import ActionOutcome, Actor
from workers.operations.answer import publish
from workers.waits import answers, view

STREAM = DEFAULT_STREAM
KEYS = Keys()
OPERATOR = Actor("ops", Door.CLI)


def answer(
    r: redis.Redis, event_hash: str, approved: bool = True, comment: str = ""
) -> ActionOutcome:
    return operations.answer(
        OPERATOR, event_hash, approved, comment, streams=[STREAM], client=r, keys=KEYS
    )


def published(r: redis.Redis) -> list[dict[str, object]]:
    return [json.loads(fields["event"]) for _, fields in r.xrange(STREAM)]


def test_view_page_newest_first_with_total(r: redis.Redis, redis_url: str) -> None:
    for n in range(5):
        wait_for(redis_url, run_hash(n), {"data.order_id": n})
    first = view.page(r, KEYS, STREAM, offset=0, limit=2)
    assert first.total == 5 and first.has_next
    assert [w.event_hash for w in first.waits] == [run_hash(4), run_hash(3)]
    last = view.page(r, KEYS, STREAM, offset=first.next_offset + 2, limit=2)
    assert [w.event_hash for w in last.waits] == [run_hash(0)] and not last.has_next


def test_view_one_says_what_the_run_waits_for(r: redis.Redis, redis_url: str) -> None:
    wait_for(redis_url, run_hash(1), {"data.order_id": 42, "subject": "order/42"})
    sleep(redis_url, run_hash(2))
    wait = view.one(r, KEYS, STREAM, run_hash(1))
    assert wait is not None and (wait.kind, wait.type, wait.step) == (
        "event",
        ANSWER_TYPE,
        "wait#1",
    )
    assert wait.waits_for == 'refund.answered where data.order_id=42, subject="order/42"'
    assert wait.until_ms > wait.since_ms > 0 and wait.run_type == "refund.requested"
    asleep = view.one(r, KEYS, STREAM, run_hash(2))
    assert asleep is not None and asleep.waits_for == "sleep"
    assert view.one(r, KEYS, STREAM, run_hash(3)) is None
    assert view.count(r, KEYS, STREAM) == 2


def test_nested_builds_data_from_dotted_paths() -> None:
    match = {"data.order.id": 7, "data.order.kind": "refund", "data.n": 1, "subject": "s"}
    assert answers.nested(match) == {"order": {"id": 7, "kind": "refund"}, "n": 1}


@pytest.mark.django_db(transaction=True)
def test_answer_publishes_the_awaited_event(r: redis.Redis, redis_url: str) -> None:
    event_hash = run_hash(1)
    wait_for(redis_url, event_hash, {"data.order.id": 42, "subject": "order/42"})
    outcome = answer(r, event_hash, approved=False, comment="too large")
    [event] = published(r)
    assert event["type"] == ANSWER_TYPE and event["subject"] == "order/42"
    assert event["id"] == f"answer:{event_hash}:wait#1" and event["source"] == "streamdesk/operator"
    assert event["data"] == {
        "order": {"id": 42},
        "approved": False,
        "by": "ops",
        "comment": "too large",
    }
    assert event["door"] == "cli"
    assert (outcome.outcome, outcome.count, outcome.action) == ("ok", 1, "answer")


@pytest.mark.django_db(transaction=True)
def test_answer_resumes_the_run_when_a_worker_reads_it(r: redis.Redis, redis_url: str) -> None:
    event_hash = run_hash(1)
    wait_for(redis_url, event_hash, {"data.order_id": 42})
    answer(r, event_hash)
    [(entry_id, _)] = r.xrange(STREAM)
    assert engine_reads(redis_url, entry_id) == [event_hash]
    wait = view.one(r, KEYS, STREAM, event_hash)
    assert wait is not None and wait.state == "answered"
    assert json.loads(r.hget(KEYS.wait(STREAM, event_hash), "answer") or "")["data"]["approved"]


@pytest.mark.django_db(transaction=True)
def test_answer_twice_before_a_worker_reads_is_one_event(r: redis.Redis, redis_url: str) -> None:
    event_hash = run_hash(1)
    wait_for(redis_url, event_hash, {"data.order_id": 42})
    answer(r, event_hash)
    answer(r, event_hash)  # a double click: published again, the same event
    first, second = (decode_envelope(fields["event"]) for _, fields in r.xrange(STREAM))
    assert (first.source, first.type, first.id) == (second.source, second.type, second.id)


@pytest.mark.django_db(transaction=True)
def test_answer_after_the_run_resumed_is_refused(r: redis.Redis, redis_url: str) -> None:
    event_hash = run_hash(1)
    wait_for(redis_url, event_hash, {"data.order_id": 42})
    answer(r, event_hash)
    engine_reads(redis_url, r.xrange(STREAM)[0][0])
    with pytest.raises(ActionRefused, match="not waiting any more \\(answered\\)"):
        answer(r, event_hash)
    assert r.xlen(STREAM) == 2  # the answer and the resumed run's envelope, nothing more
    refused = AuditRecord.objects.filter(outcome="refused").get()
    assert (refused.action, refused.door, refused.target["event_hash"]) == (
        "answer",
        "cli",
        event_hash,
    )


@pytest.mark.django_db(transaction=True)
def test_answer_to_a_sleep_is_refused(r: redis.Redis, redis_url: str) -> None:
    sleep(redis_url, run_hash(2))
    with pytest.raises(ActionRefused, match=r"sleeps until a time.*cancel it instead"):
        answer(r, run_hash(2))
    assert not r.exists(STREAM)


@pytest.mark.django_db(transaction=True)
def test_answer_to_an_unknown_run_is_refused(r: redis.Redis) -> None:
    with pytest.raises(ActionRefused, match="is not waiting: no wait is recorded"):
        answer(r, run_hash(9))
    assert AuditRecord.objects.get().outcome == "refused"


@pytest.mark.django_db(transaction=True)
def test_answer_bad_hash_is_invalid_and_not_audited(r: redis.Redis) -> None:
    with pytest.raises(InvalidAction, match="event_hash"):
        answer(r, "not-a-hash")
    assert not AuditRecord.objects.exists()


@pytest.mark.django_db(transaction=True)
def test_answer_finds_the_wait_among_partitions(r: redis.Redis, redis_url: str) -> None:
    partitions = ["streamdesk:{events:0}", "streamdesk:{events:1}"]
    wait_for(redis_url, run_hash(1), {"data.order_id": 1}, stream=partitions[1])
    outcome = operations.answer(
        OPERATOR, run_hash(1), True, streams=partitions, client=r, keys=KEYS
    )
    assert outcome.stream == partitions[1] and r.xlen(partitions[1]) == 1
    assert not r.exists(partitions[0])


def test_publish_refuses_a_wait_that_ended_after_it_was_read(
    r: redis.Redis, redis_url: str
) -> None:
    """The check and the XADD are one script: a wait answered between the read and the
    publish gets no second answer."""
    event_hash = run_hash(1)
    wait_for(redis_url, event_hash, {"data.order_id": 42})
    read = answers.check(view.one(r, KEYS, STREAM, event_hash), event_hash)
    other = r.xadd(
        STREAM,
        {
            "event": json.dumps(
                {"type": ANSWER_TYPE, "source": "x", "id": "1", "data": {"order_id": 42}}
            )
        },
    )
    assert engine_reads(redis_url, other) == [event_hash]
    with pytest.raises(ActionRefused, match=r"not waiting any more \(answered\)"):
        publish(r, KEYS, read, answers.envelope_of(read, True, "ops"))
    assert r.xlen(STREAM) == 2  # the other answer and the resumed run, nothing from us
