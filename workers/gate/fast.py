"""The engine's half of the idempotency gate: one atomic Lua call per batch and state change.

The states and transitions: ``workers/gate/states.py``. The database is the authority
(see ``runs.py``); this record only keeps workers from starting twice.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from redis.asyncio import Redis
from redis.asyncio.client import Pipeline

from workers.core.keys import Keys
from workers.gate.scripts import lua
from workers.gate.states import Outcome

# Batch scripts: one call per batch, not per event. KEYS are gate records; all keys of a
# call must live on one server (on a cluster, partitioned streams keep them in one slot).
ACQUIRE = lua("acquire")
RENEW = lua("renew")
DONE = lua("done")
RELEASE = lua("release")
CANCELLED = lua("cancelled")


# What ``renew_many`` says of a lease still held that an operator asked to cancel.
CANCEL_ASKED = 2

# A dict lookup per event, not Outcome(value): an enum's call was 6% of the loop's time.
OUTCOMES = {o.value: o for o in Outcome}


@dataclass(frozen=True, slots=True)
class Ticket:
    outcome: Outcome
    token: int


def lease_name(owner: str, token: int) -> str:
    """One string naming one attempt; the database fences commits on it."""
    return f"{owner}#{token}"


class Gate:
    """The engine's side of the gate: leases taken and renewed per batch, released and
    marked done inside the settle pipeline."""

    def __init__(
        self,
        client: Redis,
        keys: Keys,
        lease_ms: int,
        done_ttl_s: int,
        stream: str = "",
        intake: Redis | None = None,
    ) -> None:
        self.client = client
        self.keys = keys
        # The records of a partition's events are in its cluster slot (``Keys.gate``): the
        # key's head, worked out once, not per event.
        self._head = keys.gate("", stream)
        self.lease_ms = lease_ms
        self.done_ttl_s = done_ttl_s
        self._acquire = client.register_script(ACQUIRE)
        self._renew = client.register_script(RENEW)
        # Its own connection, held: a command on a pooled connection first yields to the
        # loop (redis-py polls the connection it takes for stray data), so the database's
        # duplicate check, blocking the loop, ran before the gate's request was even sent.
        # Sent at once, the two round trips overlap.
        # (A cluster client keeps a connection per node already: the engine passes it as
        # its own ``intake``.)
        self._intake = intake if intake is not None else client.client()

    async def acquire_many(self, requests: list[tuple[str, str]]) -> list[Ticket]:
        """Try ``(event_hash, owner)`` pairs in one round trip and one script call."""
        tickets, _ = await self.acquire_reading(requests, [])
        return tickets

    async def acquire_reading(
        self, requests: list[tuple[str, str]], hashes: list[str]
    ) -> tuple[list[Ticket], list[list[Any] | None]]:
        """``acquire_many``, reading the field names of ``hashes`` in the same call (None for
        a key that is not a hash). Every key must be in one slot on a cluster."""
        if not requests:
            return [], []
        keys = [self._head + event_hash for event_hash, _ in requests] + hashes
        args: list[Any] = [self.lease_ms, self.done_ttl_s * 1000]
        args += [owner for _, owner in requests]
        flat: list[Any] = await self._acquire(keys=keys, args=args, client=self._intake)
        n = 2 * len(requests)
        pairs = zip(flat[:n:2], flat[1:n:2], strict=True)
        read = [r if isinstance(r, list) else None for r in flat[n:]]
        return [Ticket(OUTCOMES[o], int(t)) for o, t in pairs], read

    def record(self, event_hash: str) -> str:
        """The key of ``event_hash``'s gate record."""
        return self._head + event_hash

    async def aclose(self) -> None:
        if self._intake is not self.client:
            await self._intake.aclose()

    async def renew_many(self, leases: list[tuple[str, str, int]]) -> list[int]:
        """Extend ``(event_hash, owner, token)`` leases: 0 where the lease was lost, 1 where
        it is held, ``CANCEL_ASKED`` where it is held and an operator asked to cancel."""
        if not leases:
            return []
        keys = [self._head + event_hash for event_hash, _, _ in leases]
        args: list[Any] = [self.lease_ms]
        for _, owner, token in leases:
            args += [owner, token]
        return [int(r) for r in await self._renew(keys=keys, args=args)]

    # Queued as EVAL, not as a registered script: redis-py sends SCRIPT EXISTS before every
    # pipeline that holds one, a round trip per settle; the server caches EVAL's script too.

    def queue_release(self, pipe: Pipeline, event_hash: str, owner: str, token: int) -> None:
        pipe.eval(RELEASE, 1, self._head + event_hash, owner, str(token))

    def queue_cancelled(self, pipe: Pipeline, event_hashes: list[str]) -> None:
        """Mark events cancelled: after the database recorded their runs so."""
        if event_hashes:
            keys = [self._head + h for h in event_hashes]
            pipe.eval(CANCELLED, len(keys), *keys, str(self.done_ttl_s))

    def queue_done(self, pipe: Pipeline, event_hashes: list[str]) -> None:
        """Mark events done: called only after the database accepted their results."""
        if event_hashes:
            keys = [self._head + h for h in event_hashes]
            pipe.eval(DONE, len(keys), *keys, str(self.done_ttl_s))
