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

# Batch scripts: one call per batch, not per event. KEYS are gate records; all keys of a
# call must live on one server (on a cluster, partitioned streams keep them in one slot).

# ARGV: lease_ms, record_ttl_ms, owner1, owner2, ... Returns {outcome1, token1, ...}.
ACQUIRE = """
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local lease_ms, ttl_ms = tonumber(ARGV[1]), ARGV[2]
local out = {}
for i, key in ipairs(KEYS) do
  local rec = redis.call('HMGET', key, 'state', 'owner', 'token', 'lease_until')
  local token = tonumber(rec[3]) or 0
  local outcome
  if rec[1] == 'done' then
    outcome = 'hit'
  elseif rec[1] == 'running' and (tonumber(rec[4]) or 0) > now then
    outcome = 'busy'
  else
    outcome = rec[1] == 'running' and 'takeover' or 'acquired'
    token = token + 1
    redis.call('HSET', key, 'state', 'running', 'owner', ARGV[i + 2], 'token', token,
               'lease_until', now + lease_ms)
    redis.call('PEXPIRE', key, ttl_ms)
  end
  out[#out + 1] = outcome
  out[#out + 1] = token
end
return out
"""

# ARGV: lease_ms, owner1, token1, owner2, token2, ... Returns {1|0, ...}: 1 if the caller
# still holds the lease (or the event is already done: nothing was lost).
RENEW = """
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local out = {}
for i, key in ipairs(KEYS) do
  local rec = redis.call('HMGET', key, 'state', 'owner', 'token')
  local held = 0
  if rec[1] == 'done' then
    held = 1
  elseif rec[1] == 'running' and rec[2] == ARGV[2 * i] and rec[3] == ARGV[2 * i + 1] then
    redis.call('HSET', key, 'lease_until', now + tonumber(ARGV[1]))
    held = 1
  end
  out[#out + 1] = held
end
return out
"""

# ARGV: ttl_s. Done unconditionally: called only after the database accepted the results.
DONE = """
for _, key in ipairs(KEYS) do
  redis.call('HSET', key, 'state', 'done')
  redis.call('EXPIRE', key, ARGV[1])
end
return #KEYS
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

    async def acquire_many(self, requests: list[tuple[str, str]]) -> list[Ticket]:
        """Try ``(event_hash, owner)`` pairs in one round trip and one script call."""
        if not requests:
            return []
        keys = [self.keys.gate(event_hash) for event_hash, _ in requests]
        args: list[Any] = [self.lease_ms, self.done_ttl_s * 1000]
        args += [owner for _, owner in requests]
        flat: list[Any] = await self._acquire(keys=keys, args=args)
        return [Ticket(Outcome(str(o)), int(t)) for o, t in zip(flat[::2], flat[1::2], strict=True)]

    async def renew_many(self, leases: list[tuple[str, str, int]]) -> list[bool]:
        """Extend ``(event_hash, owner, token)`` leases; False where the lease was lost."""
        if not leases:
            return []
        keys = [self.keys.gate(event_hash) for event_hash, _, _ in leases]
        args: list[Any] = [self.lease_ms]
        for _, owner, token in leases:
            args += [owner, token]
        return [bool(r) for r in await self._renew(keys=keys, args=args)]

    # Queued as EVAL, not as a registered script: redis-py sends SCRIPT EXISTS before every
    # pipeline that holds one, a round trip per settle; the server caches EVAL's script too.

    def queue_release(self, pipe: Pipeline, event_hash: str, owner: str, token: int) -> None:
        pipe.eval(RELEASE, 1, self.keys.gate(event_hash), owner, str(token))

    def queue_done(self, pipe: Pipeline, event_hashes: list[str]) -> None:
        """Mark events done: called only after the database accepted their results."""
        if event_hashes:
            keys = [self.keys.gate(h) for h in event_hashes]
            pipe.eval(DONE, len(keys), *keys, str(self.done_ttl_s))
