"""What the console shows of flow control: each agent's settings, the busiest keys of a group
(running and waiting), and why a pending entry waits. Sync reads, one script call each,
bounded by the page (never a scan of a queue or of the keyspace)."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any, cast

import redis

from workers.core.keys import Keys
from workers.core.lua import lua_script
from workers.core.registry import Registry

log = logging.getLogger(__name__)

_COMMON = lua_script(__package__, "common")
DESCRIBE = _COMMON + lua_script(__package__, "describe")
BUSIEST = _COMMON + lua_script(__package__, "busiest")


@dataclass(frozen=True, slots=True)
class Position:
    """Where a pending entry stands in its key's queue."""

    event_type: str
    key: str
    rank: int  # 0: first in line
    limit: int

    @property
    def waiting(self) -> bool:
        return self.rank >= self.limit

    @property
    def ahead(self) -> int:
        """How many must finish before it may start."""
        return self.rank - self.limit + 1


@dataclass(frozen=True, slots=True)
class KeyRow:
    event_type: str
    key: str
    entries: int
    limit: int

    @property
    def running(self) -> int:
        """Its first ``limit`` entries: running, or about to (handed off, being retried)."""
        return min(self.entries, self.limit)

    @property
    def waiting(self) -> int:
        return max(self.entries - self.limit, 0)


@dataclass(frozen=True, slots=True)
class KeyTable:
    active: int  # keys with an unsettled entry
    rows: list[KeyRow]


@dataclass(frozen=True, slots=True)
class Settings:
    """An agent's flow settings as the console lists them."""

    event_type: str
    key: str | None
    concurrency: int | None
    timeout_s: float | None
    max_deliveries: int | None

    @property
    def keyed(self) -> bool:
        return self.key is not None or self.concurrency is not None


def agent_settings(registry: Registry) -> list[Settings]:
    """Every agent the registry holds (schema-only types left out), by event type."""
    out = []
    for spec in registry:
        if spec.placeholder:
            continue
        d = spec.declared
        out.append(Settings(spec.type, d.key, d.concurrency, d.timeout_s, d.max_deliveries))
    return out


def _split(queue: str, head: str) -> tuple[str, str]:
    event_type, _, key = queue.removeprefix(head).partition(":")
    return event_type, key


def _head(keys: Keys, stream: str, group: str) -> str:
    return keys.flow_queue(stream, group, "", "")[:-1]


def positions(
    client: redis.Redis, keys: Keys, stream: str, group: str, ids: list[str]
) -> dict[str, Position]:
    """The keyed entries among ``ids`` and where each stands."""
    if not ids:
        return {}
    script = client.register_script(DESCRIBE)
    try:
        rows = cast(list[Any], script(keys=[keys.flow_entries(stream, group)], args=list(ids)))
    except redis.ResponseError as exc:  # a key of another type: the page goes on without
        log.warning("reading the flow queues of %s/%s failed: %s", stream, group, exc)
        return {}
    head, out = _head(keys, stream, group), {}
    for entry_id, row in zip(ids, rows, strict=True):
        if row:
            event_type, key = _split(str(row[0]), head)
            out[entry_id] = Position(event_type, key, int(row[1]), int(row[2]))
    return out


def key_table(
    client: redis.Redis, keys: Keys, stream: str, group: str, count: int = 20
) -> KeyTable:
    """The ``count`` keys of a group that most recently took an event, with their counts."""
    index, entries = keys.flow_index(stream, group), keys.flow_entries(stream, group)
    script = client.register_script(BUSIEST)
    try:
        active, rows = cast(list[Any], script(keys=[index, entries], args=[count]))
    except redis.ResponseError as exc:
        log.warning("reading the flow keys of %s/%s failed: %s", stream, group, exc)
        return KeyTable(0, [])
    head = _head(keys, stream, group)
    table = []
    for queue, n, limit in rows:
        event_type, key = _split(str(queue), head)
        table.append(KeyRow(event_type, key, int(n), int(limit)))
    return KeyTable(int(active), table)
