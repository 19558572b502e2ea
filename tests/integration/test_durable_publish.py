"""Durable publishing (issue 17): ``publish(..., durable=True)``, ``publish --durable`` and a
webhook source with ``durable: true`` return only once a replica holds the entry, against a
real primary and replica."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest
import redis

from tests.support.processes import manage
from tests.support.replication import Pair, replicated
from workers.core.errors import NotReplicated
from workers.core.keys import DEFAULT_STREAM, Keys
from workers.producers.publish import build_envelope, publish
from workers.producers.webhooks.replay import OncePublisher
from workers.redis.replication import Durability


@pytest.fixture
def pair() -> Iterator[Pair]:
    with replicated() as started:
        yield started


def primary(pair: Pair) -> redis.Redis:
    return redis.Redis.from_url(pair.primary.url, decode_responses=True)


def test_a_durable_publish_returns_once_the_replica_holds_the_entry(pair: Pair) -> None:
    with primary(pair) as client, pair.replica_client() as replica:
        for n in range(50):
            entry_id = publish("demo.echo", {"n": n}, client=client, durable=True)
            # Read on the replica at once: WAIT returned, so it must already be there.
            assert replica.xrange(DEFAULT_STREAM, entry_id, entry_id), n


def test_without_a_replica_a_durable_publish_raises_and_says_what_happened(pair: Pair) -> None:
    pair.stop_replica()
    with primary(pair) as client:
        with pytest.raises(NotReplicated, match=r"reached the primary, but 0 of the 1"):
            publish("demo.echo", {"n": 1}, client=client, durable=True)
        assert client.xlen(DEFAULT_STREAM) == 1  # written: a retry's copy is a duplicate
        publish("demo.echo", {"n": 2}, client=client)  # not durable: no wait, no error
        assert client.xlen(DEFAULT_STREAM) == 2


def test_a_durable_webhook_replay_waits_for_the_replica_too(pair: Pair) -> None:
    """The sender's retry of a body already published finds the first copy; it is confirmed
    by the same WAIT (the script rewrites the seen key, and replicas apply in order)."""
    publisher = OncePublisher(Keys(), 60)
    envelope = build_envelope("demo.echo", {"n": 1}, source="hook")
    with primary(pair) as client:
        first = publisher.publish(
            client, DEFAULT_STREAM, envelope, source="hook", body=b"{}", durability=Durability()
        )
        again = publisher.publish(
            client, DEFAULT_STREAM, envelope, source="hook", body=b"{}", durability=Durability()
        )
        assert (again.entry_id, again.duplicate) == (first.entry_id, True)
        pair.stop_replica()
        with pytest.raises(NotReplicated, match="webhook hook's event"):
            publisher.publish(
                client,
                DEFAULT_STREAM,
                envelope,
                source="hook",
                body=b"{}",
                durability=Durability(timeout_ms=200),
            )


def test_publish_command_durable_exits_1_without_a_replica(pair: Pair) -> None:
    env = {**os.environ, "REDIS_URL": pair.primary.url, "DEBUG": "1"}
    ok = manage(env, "publish", "demo.echo", "--durable")
    assert ok.returncode == 0 and ok.stdout.strip(), ok.stderr
    pair.stop_replica()
    failed = manage(env, "publish", "demo.echo", "--durable")
    assert failed.returncode == 1 and "0 of the 1 replica(s)" in failed.stderr
    assert "Traceback" not in failed.stderr
