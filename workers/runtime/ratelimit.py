"""Per-tool rate budgets shared by every worker on every host: a token bucket in Redis.

One atomic script call per take. A take that finds the bucket empty *reserves* the next
token (the level goes below zero) and returns when it is due: the agent is deferred until
then, and its retry spends the reservation instead of a new token, so a deferred event is
never starved by newcomers and reservations never let more calls through than the budget:
over any window of T seconds at most ``burst + rate * T`` calls start.

A keyed budget (``github:{data.installation_id}``, ``budget_keys.py``) has one bucket per
value, ``github:42``, with the rate and burst of the configured ``github``: its own keys,
expiring once the bucket would be full again, and an entry in the budget's index of live
buckets for the console.

Keys (``Keys.budget`` and ``Keys.budget_held``, one hash tag per bucket, so both live on one
cluster slot): ``<prefix>budget:{<bucket>}`` hash: tokens, ts (server ms), taken, deferrals;
``<prefix>budget:{<bucket>}:held`` sorted set: event hash -> when its reserved token is due;
``<prefix>budget:{<name>}:keys`` sorted set: keyed bucket -> when its keys expire.
"""

from __future__ import annotations

import re
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from redis.asyncio import Redis

from workers.core.errors import ConfigurationError
from workers.core.keys import Keys
from workers.core.lua import lua_script
from workers.runtime.budget_keys import base_name, is_keyed

# A reservation nobody came back for (its event was dead-lettered or purged) is dropped
# this long after it was due.
STALE_MS = 10 * 60 * 1000
# A process writes a keyed bucket's expiry into the index again once this much of the
# bucket's refill time has gone by since it last did: not on every take.
REINDEX_FRACTION = 0.5
INDEX_TTL_MS = 24 * 3600 * 1000
# Keyed buckets a process remembers having indexed, before it forgets the expired ones.
INDEXED_MAX = 4096


_SPEC = re.compile(
    r"^\s*(?P<name>[\w.-]+)\s*=\s*(?P<rate>\d+(\.\d+)?)\s*/\s*(?P<unit>s|m|h)"
    r"(\s*:\s*(?P<burst>\d+))?\s*$"
)
_SECONDS = {"s": 1, "m": 60, "h": 3600}


@dataclass(frozen=True, slots=True)
class Budget:
    """``rate`` tokens per second, up to ``burst`` saved up."""

    name: str
    rate: float
    burst: int

    def __post_init__(self) -> None:
        if self.rate <= 0:
            raise ConfigurationError(f"budget {self.name!r}: rate must be above 0")
        if self.burst < 1:
            raise ConfigurationError(f"budget {self.name!r}: burst must be at least 1")


def parse_budgets(spec: str) -> dict[str, Budget]:
    """``"github=50/s:100, slack=1/s"``: name = rate per s|m|h, optional ``:burst`` (default
    the rate per second, at least 1)."""
    budgets: dict[str, Budget] = {}
    for part in filter(None, (p.strip() for p in spec.split(","))):
        match = _SPEC.match(part)
        if match is None:
            raise ConfigurationError(
                f"rate limit {part!r} is not NAME=RATE/s|m|h[:BURST], e.g. github=50/s:100"
            )
        rate = float(match["rate"]) / _SECONDS[match["unit"]]
        burst = int(match["burst"]) if match["burst"] else max(1, int(rate))
        budgets[match["name"]] = Budget(match["name"], rate, burst)
    return budgets


def budgets_from(options: Mapping[str, Any]) -> dict[str, Budget]:
    """Settings' ``{"github": {"rate": 50, "burst": 100}}`` (rate per second)."""
    out: dict[str, Budget] = {}
    for name, value in options.items():
        if isinstance(value, Budget):
            out[name] = value
            continue
        try:
            out[name] = Budget(name, float(value["rate"]), int(value.get("burst", value["rate"])))
        except (KeyError, TypeError, ValueError) as exc:
            raise ConfigurationError(
                f"rate limit {name!r} needs a rate (per second) and a burst: {exc}"
            ) from None
    return out


@dataclass(frozen=True, slots=True)
class Grant:
    ok: bool
    # When not ok: how long until this event's reserved token is due.
    wait_ms: int = 0


class Limiter:
    def __init__(self, client: Redis, budgets: Mapping[str, Budget], prefix: str) -> None:
        self.client = client
        self.budgets = dict(budgets)
        self.keys = Keys(prefix)
        self._take = client.register_script(lua_script(__package__, "budget_take"))
        # Keyed bucket -> the expiry (server ms) this process last wrote into the index.
        self._indexed: dict[str, int] = {}

    def budget(self, name: str) -> Budget:
        """The configured budget of bucket ``name`` (``github:42`` draws on ``github``)."""
        try:
            return self.budgets[base_name(name)]
        except KeyError:
            known = ", ".join(sorted(self.budgets)) or "none"
            raise ConfigurationError(
                f"no rate budget named {base_name(name)!r} (configured: {known}); "
                "set STREAMDESK_RATE_LIMITS, e.g. github=50/s:100"
            ) from None

    async def take(self, name: str, holder: str) -> Grant:
        """One token of bucket ``name`` (a budget, or a keyed bucket such as ``github:42``)
        for ``holder`` (an event hash)."""
        budget = self.budget(name)
        keyed = is_keyed(name)
        keys = [self.keys.budget(name), self.keys.budget_held(name)]
        args: list[str | int | float] = [budget.rate, budget.burst, holder, STALE_MS, int(keyed)]
        ok, wait, expiry, now = await self._take(keys=keys, args=args)
        if keyed:
            await self._index(budget, name, int(expiry), int(now))
        return Grant(bool(int(ok)), int(wait))

    async def _index(self, budget: Budget, bucket: str, expiry_ms: int, now_ms: int) -> None:
        """Record when a keyed bucket's keys expire, in its budget's index (another slot than
        the bucket's, so beside the script, not in it)."""
        refill_ms = budget.burst * 1000 / budget.rate
        if expiry_ms - self._indexed.get(bucket, 0) < refill_ms * REINDEX_FRACTION:
            return
        if len(self._indexed) >= INDEXED_MAX:
            self._indexed = {k: v for k, v in self._indexed.items() if v > now_ms}
        self._indexed[bucket] = expiry_ms
        index = self.keys.budget_keys(budget.name)
        async with self.client.pipeline(transaction=False) as pipe:
            pipe.zadd(index, {bucket: expiry_ms})
            pipe.zremrangebyscore(index, "-inf", now_ms)
            # Trimmed on every write; a day past the last one if the budget falls out of use.
            pipe.pexpire(index, expiry_ms - now_ms + INDEX_TTL_MS)
            await pipe.execute()


@dataclass(frozen=True, slots=True)
class Level:
    """A budget as the console shows it. A keyed budget's own bucket is only used by
    unkeyed calls; ``keyed`` counts its live per-value buckets."""

    budget: Budget
    tokens: float  # now, refilled; below 0 while reservations wait
    taken: int
    deferrals: int  # events deferred so far
    waiting: int  # events holding a reservation now
    keyed: int = 0  # live keyed buckets (``github:42``...)


_PER_BUDGET = 3


def queue_levels(pipe: Any, prefix: str, budgets: Mapping[str, Budget]) -> None:
    """Three commands per budget on a (sync or async) pipeline; read with ``levels``."""
    keys = Keys(prefix)
    now_ms = int(time.time() * 1000)
    for name in budgets:
        pipe.hmget(keys.budget(name), "tokens", "ts", "taken", "deferrals")
        pipe.zcard(keys.budget_held(name))
        pipe.zcount(keys.budget_keys(name), now_ms, "+inf")


def levels(
    replies: list[Any], budgets: Mapping[str, Budget], now_ms: float | None = None
) -> list[Level]:
    now = time.time() * 1000 if now_ms is None else now_ms
    out: list[Level] = []
    for i, budget in enumerate(budgets.values()):
        bucket, waiting, keyed = replies[_PER_BUDGET * i : _PER_BUDGET * (i + 1)]
        tokens, ts, taken, deferrals = bucket
        level = float(budget.burst) if tokens is None else float(tokens)
        if ts is not None:
            level = min(budget.burst, level + max(now - float(ts), 0) * budget.rate / 1000)
        out.append(
            Level(budget, level, int(taken or 0), int(deferrals or 0), int(waiting), int(keyed))
        )
    return out
