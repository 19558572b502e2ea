"""The fast half of the idempotency gate: one atomic Lua call per state change.

States of ``streamdesk:idem:<hash>``: absent -> running -> done, with ``released``
after a failed run. ``running`` holds an owner (consumer/entry id), a fencing token
that only grows, and a lease measured on the server's clock. The database is the
authority (see ``runs.py``); this record only keeps workers from starting twice.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from redis.asyncio import Redis
from redis.asyncio.client import Pipeline

from workers.keys import Keys

# ARGV: owner, lease_ms, record_ttl_ms. Returns {outcome, token}.
ACQUIRE = """
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local rec = redis.call('HMGET', KEYS[1], 'state', 'owner', 'token', 'lease_until')
local token = tonumber(rec[3]) or 0
if rec[1] == 'done' then
  return {'hit', token}
end
local outcome = 'acquired'
if rec[1] == 'running' then
  if (tonumber(rec[4]) or 0) > now then
    return {'busy', token}
  end
  outcome = 'takeover'
end
token = token + 1
redis.call('HSET', KEYS[1], 'state', 'running', 'owner', ARGV[1], 'token', token,
           'lease_until', now + tonumber(ARGV[2]))
redis.call('PEXPIRE', KEYS[1], ARGV[3])
return {outcome, token}
"""

# ARGV: owner, token, lease_ms. 1 if the caller still holds the lease (or already finished).
RENEW = """
local rec = redis.call('HMGET', KEYS[1], 'state', 'owner', 'token')
if rec[1] == 'done' then
  return 1
end
if rec[1] ~= 'running' or rec[2] ~= ARGV[1] or rec[3] ~= ARGV[2] then
  return 0
end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('HSET', KEYS[1], 'lease_until', now + tonumber(ARGV[3]))
return 1
"""

# ARGV: owner, token. Lets a retry start at once instead of waiting out the lease.
RELEASE = """
local rec = redis.call('HMGET', KEYS[1], 'state', 'owner', 'token')
if rec[1] ~= 'running' or rec[2] ~= ARGV[1] or rec[3] ~= ARGV[2] then
  return 0
end
redis.call('HSET', KEYS[1], 'state', 'released', 'lease_until', 0)
return 1
"""


class Outcome(StrEnum):
    ACQUIRED = "acquired"
    TAKEOVER = "takeover"
    BUSY = "busy"
    HIT = "hit"

    @property
    def may_run(self) -> bool:
        return self in (Outcome.ACQUIRED, Outcome.TAKEOVER)


@dataclass(frozen=True, slots=True)
class Ticket:
    outcome: Outcome
    token: int


def lease_name(owner: str, token: int) -> str:
    """One string naming one attempt; the database fences commits on it."""
    return f"{owner}#{token}"


class Gate:
    def __init__(self, client: Redis, keys: Keys, lease_ms: int, done_ttl_s: int) -> None:
        self.client = client
        self.keys = keys
        self.lease_ms = lease_ms
        self.done_ttl_s = done_ttl_s
        self._acquire = client.register_script(ACQUIRE)
        self._renew = client.register_script(RENEW)
        self._release = client.register_script(RELEASE)

    async def acquire_many(self, requests: list[tuple[str, str]]) -> list[Ticket]:
        """Try ``(event_hash, owner)`` pairs in one round trip (one script call per key)."""
        if not requests:
            return []
        ttl_ms = self.done_ttl_s * 1000
        async with self.client.pipeline(transaction=False) as pipe:
            for event_hash, owner in requests:
                await self._acquire(
                    keys=[self.keys.gate(event_hash)],
                    args=[owner, self.lease_ms, ttl_ms],
                    client=pipe,
                )
            replies: list[Any] = await pipe.execute()
        return [Ticket(Outcome(str(r[0])), int(r[1])) for r in replies]

    async def renew_many(self, leases: list[tuple[str, str, int]]) -> list[bool]:
        """Extend ``(event_hash, owner, token)`` leases; False where the lease was lost."""
        if not leases:
            return []
        async with self.client.pipeline(transaction=False) as pipe:
            for event_hash, owner, token in leases:
                await self._renew(
                    keys=[self.keys.gate(event_hash)],
                    args=[owner, token, self.lease_ms],
                    client=pipe,
                )
            replies = await pipe.execute()
        return [bool(r) for r in replies]

    async def queue_release(self, pipe: Pipeline, event_hash: str, owner: str, token: int) -> None:
        await self._release(keys=[self.keys.gate(event_hash)], args=[owner, token], client=pipe)

    def queue_done(self, pipe: Pipeline, event_hash: str) -> None:
        """Done unconditionally: called only after the database accepted the result."""
        key = self.keys.gate(event_hash)
        pipe.hset(key, "state", "done")
        pipe.expire(key, self.done_ttl_s)
