"""What the Redis page shows of one server (or one cluster node), parsed from its ``INFO``
and ``SLOWLOG GET`` replies, and what those figures warn about. Pure: the reading is
``console/live/redis_panel.py``'s.

Only what an operator of Streamdesk acts on: memory against ``maxmemory`` and the eviction
policy (a policy that may evict drops streams or gate records silently), persistence (a
failed save or rewrite), clients, and the slowest recent commands with the connection that
sent them (Streamdesk names its own: ``streamdesk-worker:*``, ``streamdesk-console``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

# Memory used past this share of maxmemory is a warning: at the limit writes fail
# (noeviction) or keys go (any other policy).
NEAR_FULL = 0.9
# A slowlog command's arguments shown, joined, at most this long (the server already cuts
# each argument at 128 characters and a command at 32 arguments).
COMMAND_CHARS = 160


@dataclass(frozen=True, slots=True)
class PanelWarning:
    level: str  # "bad" (needs attention) or "warn" (check), as health marks
    text: str


@dataclass(frozen=True, slots=True)
class NodeInfo:
    server: str  # "Valkey 8.1.8", "Redis 7.0.15"
    role: str  # master / slave (INFO replication)
    uptime_s: int
    used_memory: int
    peak_memory: int
    maxmemory: int  # 0: no limit
    policy: str  # maxmemory-policy
    system_memory: int  # 0 when the server does not say
    evicted_keys: int
    expired_keys: int
    aof_enabled: bool
    aof_rewriting: bool
    aof_rewrite_status: str  # aof_last_bgrewrite_status: ok / err
    aof_write_status: str  # aof_last_write_status: ok / err
    rdb_saves: int | None  # snapshots since start (Redis >= 7), None if not reported
    rdb_last_save_s: int  # unix time of the last successful save (or the start)
    rdb_saving: bool
    rdb_bgsave_status: str  # ok / err
    changes_since_save: int
    connected_clients: int
    blocked_clients: int
    maxclients: int
    ops_per_s: int  # instantaneous_ops_per_sec: the server's own recent rate
    keys: int  # every database's keys (INFO keyspace)
    keys_with_ttl: int  # of them, with a TTL: what a volatile-* policy may evict

    @property
    def used_pct(self) -> float | None:
        """Used memory as a share of maxmemory (0-100+), None without a limit."""
        return 100 * self.used_memory / self.maxmemory if self.maxmemory else None


def _int(info: Mapping[str, Any], name: str, default: int = 0) -> int:
    try:
        return int(info.get(name, default))
    except (TypeError, ValueError):
        return default


def _status(info: Mapping[str, Any], name: str) -> str:
    return str(info.get(name, "ok"))


def server_name(info: Mapping[str, Any]) -> str:
    """Valkey reports ``server_name: valkey`` and its own version beside a compatible
    ``redis_version``; Redis reports neither."""
    if str(info.get("server_name", "")).lower() == "valkey":
        return f"Valkey {info.get('valkey_version', info.get('redis_version', '?'))}"
    return f"Redis {info.get('redis_version', '?')}"


def node_info(info: Mapping[str, Any]) -> NodeInfo:
    """The panel's figures from a parsed ``INFO`` (the default sections: server, clients,
    memory, persistence, stats, replication), as redis-py's ``info()`` returns it."""
    return NodeInfo(
        server=server_name(info),
        role=str(info.get("role", "master")),
        uptime_s=_int(info, "uptime_in_seconds"),
        used_memory=_int(info, "used_memory"),
        peak_memory=_int(info, "used_memory_peak"),
        maxmemory=_int(info, "maxmemory"),
        policy=str(info.get("maxmemory_policy", "")),
        system_memory=_int(info, "total_system_memory"),
        evicted_keys=_int(info, "evicted_keys"),
        expired_keys=_int(info, "expired_keys"),
        aof_enabled=_int(info, "aof_enabled") == 1,
        aof_rewriting=_int(info, "aof_rewrite_in_progress") == 1,
        aof_rewrite_status=_status(info, "aof_last_bgrewrite_status"),
        aof_write_status=_status(info, "aof_last_write_status"),
        rdb_saves=_int(info, "rdb_saves") if "rdb_saves" in info else None,
        rdb_last_save_s=_int(info, "rdb_last_save_time"),
        rdb_saving=_int(info, "rdb_bgsave_in_progress") == 1,
        rdb_bgsave_status=_status(info, "rdb_last_bgsave_status"),
        changes_since_save=_int(info, "rdb_changes_since_last_save"),
        connected_clients=_int(info, "connected_clients"),
        blocked_clients=_int(info, "blocked_clients"),
        maxclients=_int(info, "maxclients"),
        ops_per_s=_int(info, "instantaneous_ops_per_sec"),
        keys=_keyspace(info, "keys"),
        keys_with_ttl=_keyspace(info, "expires"),
    )


def _keyspace(info: Mapping[str, Any], field: str) -> int:
    """A count summed over the ``db<N>`` lines (redis-py parses each into a dict)."""
    return sum(
        _int(value, field)
        for name, value in info.items()
        if name.startswith("db") and name[2:].isdigit() and isinstance(value, Mapping)
    )


@dataclass(frozen=True, slots=True)
class SlowEntry:
    id: int
    at_s: int  # unix time the command started
    duration_us: int
    command: str
    client_addr: str
    client_name: str  # "" when the connection set none
    node: str = ""  # the cluster node that logged it, "" for a single server


def _text(value: Any) -> str:
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)


def _command(args: Any) -> str:
    joined = " ".join(_text(a) for a in args) if isinstance(args, list) else _text(args)
    return joined if len(joined) <= COMMAND_CHARS else joined[: COMMAND_CHARS - 1] + "…"


def slow_entries(reply: Any, node: str = "") -> list[SlowEntry]:
    """``SLOWLOG GET``'s raw reply (newest first): each entry is [id, start time, duration
    in µs, [arguments], client address, client name]; the last two since Redis 4."""
    entries = []
    for item in reply if isinstance(reply, list) else []:
        try:
            entry_id, at_s, duration_us, args, *rest = item
            addr, name = [*map(_text, rest), "", ""][:2]
            entries.append(
                SlowEntry(
                    int(entry_id), int(at_s), int(duration_us), _command(args), addr, name, node
                )
            )
        except (TypeError, ValueError):
            continue  # not an entry this shape: skip it, keep the rest
    return entries


def eviction_warning(info: NodeInfo, node: str = "") -> PanelWarning | None:
    """What the eviction policy can drop once memory reaches maxmemory. No limit
    (maxmemory 0) evicts nothing, whatever the policy says."""
    where = f"{node}: " if node else ""
    if not info.maxmemory or info.policy == "noeviction":
        return None
    evicted = (
        f" {info.evicted_keys:,} "
        f"{'key was' if info.evicted_keys == 1 else 'keys were'} evicted since the server started."
        if info.evicted_keys
        else ""
    )
    fix = " Set maxmemory-policy noeviction: at the limit writes then fail loudly instead."
    if info.policy.startswith("allkeys-"):
        text = (
            f"{where}maxmemory-policy {info.policy} can evict any key when memory reaches "
            "maxmemory: a stream with its consumer groups and pending entries, dead letters, "
            "gate records. Events not yet processed are lost without an error."
        )
        return PanelWarning("bad", text + evicted + fix)
    if info.policy.startswith("volatile-"):
        text = (
            f"{where}maxmemory-policy {info.policy} can evict keys with a TTL when memory "
            "reaches maxmemory: these include Streamdesk's gate (idempotency) records, "
            "streamdesk:idem:*, and losing one means an event can run twice (and worker "
            "heartbeats and leases)."
        )
        return PanelWarning("bad" if info.evicted_keys else "warn", text + evicted + fix)
    return None  # a policy this console does not know: shown as it is


def memory_warning(info: NodeInfo, node: str = "") -> PanelWarning | None:
    """Near the limit: with noeviction writes (new events, acks) are about to fail."""
    pct = info.used_pct
    if pct is None or pct < 100 * NEAR_FULL:
        return None
    where = f"{node}: " if node else ""
    then = (
        "writes (new events, acknowledgements) fail with OOM"
        if info.policy == "noeviction"
        else f"keys are evicted ({info.policy})"
    )
    return PanelWarning("bad", f"{where}memory is at {pct:.0f}% of maxmemory: at the limit {then}.")


def persistence_warning(info: NodeInfo, node: str = "") -> PanelWarning | None:
    """A failed background save, AOF rewrite or AOF write: a restart may lose writes."""
    failed = [
        what
        for what, status in (
            ("the last RDB save (bgsave)", info.rdb_bgsave_status),
            ("the last AOF rewrite", info.aof_rewrite_status if info.aof_enabled else "ok"),
            ("the last AOF write", info.aof_write_status if info.aof_enabled else "ok"),
        )
        if status != "ok"
    ]
    if not failed:
        return None
    where = f"{node}: " if node else ""
    return PanelWarning(
        "bad", f"{where}{' and '.join(failed)} failed: see the server's log (disk full?)."
    )


def node_warnings(info: NodeInfo, node: str = "") -> list[PanelWarning]:
    found = (
        eviction_warning(info, node),
        memory_warning(info, node),
        persistence_warning(info, node),
    )
    return [w for w in found if w is not None]
