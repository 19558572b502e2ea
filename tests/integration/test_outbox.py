"""The transactional outbox and its relay, on real Redis and the real database."""

from __future__ import annotations

import threading
from collections import Counter
from typing import Any

import pytest
import redis
from django.db import connection, transaction

from tests.support.engine import STREAM, run_burst
from tests.support.outbox import counting_registry
from workers.core.config import EngineConfig
from workers.core.errors import UnknownEventType
from workers.core.events import decode_envelope
from workers.core.registry import Registry
from workers.models import AgentRun, OutboxEvent, RunStatus
from workers.producers.outbox import NotInTransaction, emit, outbox_lag
from workers.producers.relay import Relay, RelayConfig

pytestmark = pytest.mark.django_db(transaction=True)

needs_postgres = pytest.mark.skipif(
    "connection.vendor != 'postgresql'", reason="PostgreSQL only (row locks, LISTEN/NOTIFY)"
)


REGISTRY = counting_registry(Counter())


def emit_many(subjects: list[str], registry: Registry = REGISTRY) -> list[OutboxEvent]:
    with transaction.atomic():
        return [
            emit("test.changed", {"n": n}, subject=subject, registry=registry)
            for n, subject in enumerate(subjects)
        ]


def stream_envelopes(r: redis.Redis) -> list[Any]:
    return [decode_envelope(fields["event"]) for _, fields in r.xrange(STREAM)]


def test_emit_then_relay_xadds_one_entry_per_row_with_the_row_id(r: redis.Redis) -> None:
    rows = emit_many(["ticket/1", "ticket/2", "ticket/1"])
    assert Relay(r).run_once() == 3
    envelopes = stream_envelopes(r)
    assert [(e.id, e.source, e.subject) for e in envelopes] == [
        (str(row.pk), "outbox", row.subject) for row in rows
    ]
    assert [e.data for e in envelopes] == [{"n": 0}, {"n": 1}, {"n": 2}]
    assert OutboxEvent.objects.filter(sent_at__isnull=True).count() == 0
    assert Relay(r).run_once() == 0 and r.xlen(STREAM) == 3


def test_emit_outside_a_transaction_is_refused(r: redis.Redis) -> None:
    with pytest.raises(NotInTransaction, match=r"transaction\.atomic"):
        emit("test.changed", {}, subject="ticket/1", registry=REGISTRY)
    assert not OutboxEvent.objects.exists()


def test_emit_unknown_type_writes_nothing(r: redis.Redis) -> None:
    with pytest.raises(UnknownEventType), transaction.atomic():
        emit("no.such", {}, subject="x", registry=REGISTRY)
    assert not OutboxEvent.objects.exists()


def test_rolled_back_transaction_publishes_nothing(r: redis.Redis) -> None:
    class Abort(Exception):
        pass

    with pytest.raises(Abort), transaction.atomic():
        emit("test.changed", {"n": 1}, subject="ticket/1", registry=REGISTRY)
        raise Abort
    assert Relay(r).run_once() == 0
    assert not r.exists(STREAM) and not OutboxEvent.objects.exists()


def test_relay_keeps_each_subjects_order_across_batches(r: redis.Redis) -> None:
    subjects = [f"ticket/{i % 3}" for i in range(20)]
    rows = emit_many(subjects)
    relay = Relay(r, RelayConfig(batch_size=3))
    while relay.run_once():
        pass
    assert relay.sent == 20
    ids = [e.id for e in stream_envelopes(r)]
    assert ids == [str(row.pk) for row in rows]


@needs_postgres
def test_two_relays_at_once_send_each_row_once(r: redis.Redis, redis_url: str) -> None:
    for _ in range(10):
        emit_many([f"ticket/{i % 7}" for i in range(50)])

    def relay() -> None:
        client = redis.Redis.from_url(redis_url, decode_responses=True)
        try:
            worker = Relay(client, RelayConfig(batch_size=20))
            while OutboxEvent.objects.filter(sent_at__isnull=True).exists():
                worker.run_once()
        finally:
            client.close()
            connection.close()

    threads = [threading.Thread(target=relay) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    ids = [e.id for e in stream_envelopes(r)]
    assert len(ids) == 500 and len(set(ids)) == 500
    assert ids == sorted(ids, key=int)


def test_a_row_xadded_twice_runs_its_agent_once(
    r: redis.Redis, redis_url: str, config: EngineConfig
) -> None:
    runs: Counter[str] = Counter()
    registry = counting_registry(runs)
    rows = emit_many(["ticket/1", "ticket/2"], registry)
    Relay(r).run_once()
    # What a relay killed before marking the rows sent leaves behind.
    OutboxEvent.objects.update(sent_at=None)
    Relay(r).run_once()
    assert r.xlen(STREAM) == 4

    run_burst(redis_url, config, registry)
    assert runs == {str(row.pk): 1 for row in rows}
    assert AgentRun.objects.filter(status=RunStatus.SUCCEEDED).count() == 2


def test_outbox_lag_counts_unsent_rows_and_the_oldest_age(r: redis.Redis) -> None:
    assert outbox_lag() == outbox_lag().__class__(unsent=0, oldest_age_s=None)
    emit_many(["ticket/1", "ticket/2"])
    lag = outbox_lag()
    assert lag.unsent == 2 and lag.oldest_age_s is not None and lag.oldest_age_s >= 0
    Relay(r).run_once()
    assert outbox_lag().unsent == 0


@needs_postgres
def test_notify_wakes_a_waiting_relay_at_once(r: redis.Redis, redis_url: str) -> None:
    stop = threading.Event()
    client = redis.Redis.from_url(redis_url, decode_responses=True)
    # Without a notification the relay would not look again for a minute.
    relay = Relay(client, RelayConfig(listen_timeout_s=60))
    thread = threading.Thread(target=relay.run_forever, args=(stop,))
    thread.start()
    try:
        emit_many(["ticket/1"])
        woke = threading.Event()
        for _ in range(100):
            if r.xlen(STREAM) == 1:
                woke.set()
                break
            stop.wait(0.02)
        assert woke.is_set(), "the relay did not publish within 2 s of the commit"
    finally:
        stop.set()
        thread.join(timeout=10)
        client.close()
