"""A real ``runworker``'s Redis connections carry its name (``streamdesk-worker:<consumer>``),
its pub/sub listener's subscription included, so the server's CLIENT LIST tells them apart."""

from __future__ import annotations

import pytest
import redis

from tests.support.actions import KEYS
from tests.support.processes import Workers
from tests.support.wait import wait_for
from workers.redis.client_names import WORKER, worker_client_name

pytestmark = [pytest.mark.serial, pytest.mark.e2e, pytest.mark.django_db(transaction=True)]


def named(r: redis.Redis, name: str) -> list[dict[str, str]]:
    return [c for c in r.client_list() if c["name"] == name]


def test_a_runworkers_connections_carry_its_name(r: redis.Redis, workers: Workers) -> None:
    workers.start("named-worker")
    wait_for(lambda: r.exists(KEYS.worker("named-worker")), 20, "the worker's heartbeat")
    name = worker_client_name("named-worker")
    # The engine's connection(s), and the pub/sub listener's subscription (flag P).
    wait_for(lambda: any("P" in c["flags"] for c in named(r, name)), 20, "the pub/sub listener")
    assert len(named(r, name)) >= 2, r.client_list()


def test_its_history_recorder_is_named_as_a_worker(r: redis.Redis, workers: Workers) -> None:
    """The recorder is most of an idle worker's traffic: the console must count it."""
    workers.start("recording-worker")
    wait_for(lambda: r.get(KEYS.history_recorder) is not None, 20, "a recorder to hold the lease")
    assert named(r, WORKER), r.client_list()  # the recorder thread's client
