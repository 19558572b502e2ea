"""Per-tool rate budgets shared by every worker on every host: a token bucket in Redis.

One atomic script call per take. A take that finds the bucket empty *reserves* the next
token (the level goes below zero) and returns when it is due: the agent is deferred until
then, and its retry spends the reservation instead of a new token, so a deferred event is
never starved by newcomers and reservations never let more calls through than the budget:
over any window of T seconds at most ``burst + rate * T`` calls start.

Keys (``Keys.budget`` and ``Keys.budget_held``, one hash tag per budget, so both live on one
cluster slot): ``<prefix>budget:{<name>}`` hash: tokens, ts (server ms), taken, deferrals;
``<prefix>budget:{<name>}:held`` sorted set: event hash -> when its reserved token is due.
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

# A reservation nobody came back for (its event was dead-lettered or purged) is dropped
# this long after it was due.
STALE_MS = 10 * 60 * 1000


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

    def budget(self, name: str) -> Budget:
        try:
            return self.budgets[name]
        except KeyError:
            known = ", ".join(sorted(self.budgets)) or "none"
            raise ConfigurationError(
                f"no rate budget named {name!r} (configured: {known}); "
                "set STREAMDESK_RATE_LIMITS, e.g. github=50/s:100"
            ) from None

    async def take(self, name: str, holder: str) -> Grant:
        """One token of budget ``name`` for ``holder`` (an event hash)."""
        budget = self.budget(name)
        keys = [self.keys.budget(name), self.keys.budget_held(name)]
        ok, wait = await self._take(keys=keys, args=[budget.rate, budget.burst, holder, STALE_MS])
        return Grant(bool(int(ok)), int(wait))


@dataclass(frozen=True, slots=True)
class Level:
    """A budget as the console shows it."""

    budget: Budget
    tokens: float  # now, refilled; below 0 while reservations wait
    taken: int
    deferrals: int  # events deferred so far
    waiting: int  # events holding a reservation now


def queue_levels(pipe: Any, prefix: str, budgets: Mapping[str, Budget]) -> None:
    """Two commands per budget on a (sync or async) pipeline; read with ``levels``."""
    keys = Keys(prefix)
    for name in budgets:
        pipe.hmget(keys.budget(name), "tokens", "ts", "taken", "deferrals")
        pipe.zcard(keys.budget_held(name))


def levels(
    replies: list[Any], budgets: Mapping[str, Budget], now_ms: float | None = None
) -> list[Level]:
    now = time.time() * 1000 if now_ms is None else now_ms
    out: list[Level] = []
    for i, budget in enumerate(budgets.values()):
        tokens, ts, taken, deferrals = replies[2 * i]
        level = float(budget.burst) if tokens is None else float(tokens)
        if ts is not None:
            level = min(budget.burst, level + max(now - float(ts), 0) * budget.rate / 1000)
        out.append(
            Level(budget, level, int(taken or 0), int(deferrals or 0), int(replies[2 * i + 1]))
        )
    return out
