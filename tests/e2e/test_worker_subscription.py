"""A real ``runworker`` holds one pub/sub connection, for the pause, the cancel and the timer
channels together (``workers/redis/listener.py``), and after the server kills it both a pause and a
cancel still reach the worker through the channel: its blocking read lasts 30 s and its
lease is renewed every 20 s, so neither could have come another way in time."""

from __future__ import annotations

import pytest
import redis

from tests.support.actions import KEYS
from tests.support.engine import STREAM, xadd
from tests.support.processes import Workers
from tests.support.wait import wait_for
from workers import operations
from workers.core.events import stored_hash
from workers.core.keys import DEFAULT_GROUP
from workers.models import Door
from workers.operations import Actor, actions
from workers.redis.client_names import worker_client_name

# CLIENT LIST and CLIENT KILL TYPE pubsub are the whole server's.
pytestmark = [pytest.mark.serial, pytest.mark.e2e, pytest.mark.django_db(transaction=True)]

CONSUMER = "one-listener"
# The pause, the cancel and the timer's channel (workers/timers: its wake-ups).
CHANNELS = "3"
# Far below the read's block and the lease renewal: only the channel is this quick.
CHANNEL_S = 5.0


def subscriptions(r: redis.Redis) -> list[dict[str, str]]:
    """The worker's connections holding a subscription (flag P, or sub > 0)."""
    name = worker_client_name(CONSUMER)
    return [
        c
        for c in r.client_list()
        if c["name"] == name and ("P" in c["flags"] or int(c.get("sub", 0)) > 0)
    ]


def subscribed_again(r: redis.Redis, killed: str) -> bool:
    """One subscription, not the killed one, to both channels."""
    now = subscriptions(r)
    return len(now) == 1 and now[0]["id"] != killed and now[0].get("sub") == CHANNELS


def test_a_worker_holds_one_subscription_that_survives_a_kill(
    r: redis.Redis, workers: Workers
) -> None:
    entry_id = xadd(r, {"type": "browser.long", "source": "e2e", "id": "l1", "data": {}})
    event_hash = stored_hash(r.xrange(STREAM, entry_id, entry_id)[0][1]["event"])
    workers.env.update(
        STREAMDESK_AGENT_MODULES="tests.e2e.browser_agents", STREAMDESK_BLOCK_MS="30000"
    )
    workers.start(CONSUMER, "--lease-ms", "60000", "--claim-idle-ms", "120000")
    record = KEYS.gate(event_hash)
    wait_for(lambda: r.hget(record, "state") == "running", 20, "the worker to start the agent")
    wait_for(lambda: len(subscriptions(r)) == 1, 20, "the worker's subscription")
    (only,) = subscriptions(r)
    assert only["sub"] == CHANNELS, only  # on one connection

    assert r.client_kill_filter(_type="pubsub") == 1
    wait_for(lambda: subscribed_again(r, only["id"]), 10, "the worker to subscribe again")
    assert "pub/sub connection lost" in workers.log(CONSUMER)

    operations.cancel(Actor("alice", Door.CLI), event_hash, client=r, keys=KEYS)
    wait_for(lambda: r.hget(record, "state") == "cancelled", CHANNEL_S, "the cancel to reach it")
    actions.pause(r, KEYS, STREAM, DEFAULT_GROUP, "alice")
    wait_for(lambda: "paused (alice" in workers.log(CONSUMER), CHANNEL_S, "the pause to reach it")
    assert len(subscriptions(r)) == 1
