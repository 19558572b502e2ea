"""A worker's default consumer name: ``<host>-<n>``, the lowest slot of this host no live
worker holds. A worker restarted on the same host takes its old name back, so restarts do
not pile up orphaned consumers in the group, and the new process finds the old one's pending
entries as its own at start (it recovers them at once, not after the claim idle time).

A slot is held by the worker's heartbeat (``Keys.worker(name)``, a hash with a TTL): taken
by one script that writes it only if no key is there, so two processes starting at once
never share a name; freed when the
worker exits (its farewell deletes the heartbeat) or when the heartbeat expires after a
crash (a few seconds: a worker restarted sooner takes the next free slot).
"""

from __future__ import annotations

import os
import socket

import redis

from workers.core.keys import Keys
from workers.core.lua import lua_script

CLAIM = lua_script(__package__, "claim_name")

# Long enough for the worker to start and write its first heartbeat, which sets its own TTL.
CLAIM_TTL_MS = 60_000
MAX_SLOTS = 10_000


def claim_consumer_name(client: redis.Redis, keys: Keys, host: str | None = None) -> str:
    """Claim the lowest free ``<host>-<n>`` and return it."""
    host = host or socket.gethostname()
    pid = str(os.getpid())
    claim = client.register_script(CLAIM)
    for n in range(1, MAX_SLOTS + 1):
        name = f"{host}-{n}"
        if int(claim(keys=[keys.worker(name)], args=[pid, CLAIM_TTL_MS])):
            return name
    # Ten thousand live workers on one host: fall back to the old, always unique, name.
    return f"{host}-pid{pid}"
