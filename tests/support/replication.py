"""A private primary with one replica, whatever ``REDIS_URL`` says: durable publishing
(``WAIT``) needs a server that has replicas."""

from __future__ import annotations

import contextlib
import subprocess
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

import redis

from tests.support.wait import wait_for
from workers.redis.embedded import PrivateServer, free_port, valkey_binary, wait_until_ready


def replication(client: redis.Redis) -> dict[str, Any]:
    return cast(dict[str, Any], client.info("replication"))


@dataclass
class Pair:
    primary: PrivateServer
    replica_url: str
    replica: subprocess.Popen[bytes]

    def replica_client(self) -> redis.Redis:
        return redis.Redis.from_url(self.replica_url, decode_responses=True)

    def stop_replica(self) -> None:
        self.replica.kill()
        self.replica.wait(timeout=10)
        client = redis.Redis.from_url(self.primary.url, decode_responses=True)
        with client:
            wait_for(
                lambda: replication(client)["connected_slaves"] == 0,
                what="the primary to notice its replica is gone",
            )


@contextlib.contextmanager
def replicated() -> Iterator[Pair]:
    folder = Path(tempfile.mkdtemp(prefix="streamdesk-test-replica-"))
    primary = PrivateServer(folder / "primary").start()
    with redis.Redis.from_url(primary.url) as client:
        client.config_set("repl-diskless-sync-delay", 0)  # the first sync at once, not in 5 s
    port = free_port()
    (folder / "replica").mkdir()
    replica = subprocess.Popen(
        [
            str(valkey_binary()),
            *("--port", str(port), "--bind", "127.0.0.1", "--dir", str(folder / "replica")),
            *("--save", "", "--appendonly", "no"),
            *("--replicaof", "127.0.0.1", str(primary.port)),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    pair = Pair(primary, f"redis://127.0.0.1:{port}/0", replica)
    try:
        wait_until_ready(pair.replica_url, 15, replica)
        with pair.replica_client() as client:
            wait_for(
                lambda: replication(client).get("master_link_status") == "up",
                what="the replica's first sync",
            )
        yield pair
    finally:
        if replica.poll() is None:
            replica.kill()
            replica.wait(timeout=10)
        primary.stop()
