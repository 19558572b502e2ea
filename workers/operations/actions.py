"""Operator actions: the Redis half of every claim, retry, dead-letter, redrive and pause.

Sync client (``decode_responses=True``), no Django: ``workers/operations/__init__.py`` calls
these for the console, the management commands, the API and bulk jobs. Every function takes any
number of ids and works through them in chunks, one Lua call or pipeline per chunk, and reports what
it did and what it skipped. What must not interleave with workers (dead-lettering, deleting a
consumer, redriving) is one Lua call per chunk, so it sees the group as it is. The design and
the reasons: docs/actions.md. Actions on dead letters live in ``workers/operations/redrive.py``.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, cast

import redis

from workers.core.errors import ActionRefused
from workers.core.fanout import agent_of
from workers.core.keys import DEFAULT_GROUP, EVENT_FIELD, Keys
from workers.core.lua import lua_script
from workers.gate import HOLDER_PREFIX, clear_gate, dead_letter_chunk, gate_done, gate_key
from workers.operations.redrive import (
    ActionResult,
    DeadFilter,
    chunks,
    not_done,
    purge,
    redrive,
    republish,
    scan_dead,
    split_ids,
)
from workers.redis.error_groups import group_latest

__all__ = [
    "DEAD_LETTER_HOLD_MS",
    "HOLDER_PREFIX",
    "ActionRefused",
    "ActionResult",
    "DeadFilter",
    "Pause",
    "agent_in",
    "claim",
    "clear_gate",
    "dead_letter",
    "gate_done",
    "parse_pause",
    "pause",
    "paused",
    "pending_ids",
    "purge",
    "redrive",
    "remove_consumer",
    "republish",
    "resume",
    "retry_now",
    "scan_dead",
]

# How long a dead-lettered event's gate record stays "running" under the operator's name, so
# a worker that read the entry just before it was dead-lettered finds it busy and drops it
# instead of running it. Reading and gating are one round trip apart: seconds are plenty.
DEAD_LETTER_HOLD_MS = 10_000

REMOVE_CONSUMER = lua_script(__package__, "remove_consumer")

CLAIM = lua_script(__package__, "claim")

RETRY_NOW = lua_script(__package__, "retry_now")

SKIP_REASONS = {
    "gone": "not pending",
    "deleted": "payload deleted (acked)",
    "running": "running now",
    "done": "already done (will be acked as a duplicate)",
    "malformed": "not an entry id",
}


def describe_skips(why: Counter[str]) -> str:
    """``"2 not pending, 1 running now"``: why ids were skipped, for the audit record."""
    return ", ".join(f"{n} {SKIP_REASONS.get(k, k)}" for k, n in why.items() if n)


def agent_in(home: str, group: str) -> str:
    """Whose runs a group's entries are (workers/core/fanout.py): its agent's name, "" for
    the home group's agents. A group that is not one of ``home``'s (an operator's own, another
    fleet's) runs no agent of ours: its entries' records are the events' own, as before
    agents had names."""
    return agent_of(home, group) or ""


# -- pending entries ---------------------------------------------------------------------


def claim(
    client: redis.Redis, stream: str, group: str, ids: list[str], consumer: str
) -> ActionResult:
    """Move still-pending entries to ``consumer`` (XCLAIM 0 JUSTID: delivery counts
    unchanged); when none is pending, nothing is claimed and no consumer is created.

    An entry running elsewhere keeps its gate lease: its new owner finds it busy, and the
    first worker's XACK still acknowledges it."""
    valid, malformed = split_ids(ids)
    script = client.register_script(CLAIM)
    done: list[str] = []
    for chunk in chunks(valid):
        claimed = cast(list[Any], script(keys=[stream], args=[group, consumer, *chunk]))
        done += [str(i) for i in claimed]
    why = Counter(gone=len(valid) - len(done), malformed=len(malformed))
    return ActionResult(done, not_done(ids, done), detail=describe_skips(why))


def pending_ids(
    client: redis.Redis,
    stream: str,
    group: str,
    consumer: str = "",
    after: str | None = None,
    count: int = 1000,
) -> list[str]:
    """One page of the group's pending ids (of one consumer if given), after ``after``."""
    rows = cast(
        list[dict[str, Any]],
        client.xpending_range(
            stream,
            group,
            min=f"({after}" if after else "-",
            max="+",
            count=count,
            consumername=consumer or None,
        ),
    )
    return [str(row["message_id"]) for row in rows]


def remove_consumer(client: redis.Redis, stream: str, group: str, consumer: str) -> ActionResult:
    """XGROUP DELCONSUMER, refused (ActionRefused) while the consumer has pending entries:
    deleting it would drop them. A consumer that does not exist is skipped."""
    pending = int(client.register_script(REMOVE_CONSUMER)(keys=[stream], args=[group, consumer]))
    if pending > 0:
        raise ActionRefused(
            f"consumer {consumer!r} has {pending} pending entries: claim them to a live "
            "consumer first (deleting it would drop them)"
        )
    if pending < 0:
        return ActionResult([], [consumer], detail="no such consumer")
    return ActionResult([consumer], [])


def retry_now(
    client: redis.Redis,
    stream: str,
    group: str,
    ids: list[str],
    idle_ms: int,
    *,
    keys: Keys,
    home: str = DEFAULT_GROUP,
) -> ActionResult:
    """Make pending entries look idle for ``idle_ms`` (more than the workers' claim idle
    time), so the next reclaim by any live worker takes them. Owner, delivery count, entry
    id and event hash stay the same: the gate still decides whether anything runs.

    An entry whose event an agent runs now is left alone and the detail names where it
    runs: a reclaim would find it busy, run nothing and only add a delivery. ``home``: the
    home group's name, which says whose run (which gate record) a group's entry is."""
    if idle_ms < 0:
        raise ValueError(f"idle_ms must be >= 0, got {idle_ms}")
    valid, malformed = split_ids(ids)
    script = client.register_script(RETRY_NOW)
    done: list[str] = []
    running: list[str] = []  # the consumers running them
    agent = agent_in(home, group)
    for chunk in chunks(valid):
        gates = gate_keys(client, keys, stream, chunk, agent)
        records = sorted({g for g in gates if g})
        index = {key: n for n, key in enumerate(records, start=1)}
        args: list[Any] = [group, idle_ms, HOLDER_PREFIX]
        for entry_id, gate in zip(chunk, gates, strict=True):
            args += [entry_id, index.get(gate, 0)]
        replies = cast(list[Any], script(keys=[stream, *records], args=args))
        for entry_id, reply in zip(chunk, replies, strict=True):
            if reply == 1:
                done.append(entry_id)
            elif isinstance(reply, str):
                running.append(reply.rsplit("/", 1)[0])
    why = Counter(gone=len(valid) - len(done) - len(running), malformed=len(malformed))
    detail = ", ".join(d for d in (running_now(running), describe_skips(why)) if d)
    return ActionResult(done, not_done(ids, done), detail=detail)


def running_now(consumers: list[str]) -> str:
    """``"running now on worker-a: the gate decides, nothing re-run"``: entries a Retry now
    left alone because an agent runs their event (one consumer named, or how many)."""
    if not consumers:
        return ""
    names = sorted(set(consumers))
    where = names[0] if len(names) == 1 else f"{len(names)} consumers ({', '.join(names[:3])})"
    many = f"{len(consumers)} " if len(consumers) > 1 else ""
    return f"{many}running now on {where}: the gate decides, nothing re-run"


def dead_letter(
    client: redis.Redis,
    stream: str,
    group: str,
    ids: list[str],
    reason: str,
    by: str,
    *,
    keys: Keys,
    hold_ms: int = DEAD_LETTER_HOLD_MS,
    home: str = DEFAULT_GROUP,
) -> ActionResult:
    """Move pending entries to ``<stream>:dead`` and ack them, one Lua call per chunk.

    Skipped: entries not pending, entries whose event an agent is running now or has
    already run (dead-lettering those would put an event that ran among the dead), and
    pending entries whose payload was deleted (those are acked: nothing is left to keep).
    ``keys`` names the gate records: the caller's, so a deployment with its own prefix
    holds its own events' records; ``home`` (the home group) says whose: the group's agent's
    run of each event is held and checked, never another agent's."""
    valid, malformed = split_ids(ids)
    dead_at = datetime.now(UTC).isoformat()
    done: list[str] = []
    why = Counter(malformed=len(malformed))
    agent = agent_in(home, group)
    for chunk in chunks(valid):
        gates = gate_keys(client, keys, stream, chunk, agent)
        entries = list(zip(chunk, gates, strict=True))
        statuses = dead_letter_chunk(
            client,
            keys,
            stream,
            group,
            entries,
            reason=reason,
            by=by,
            dead_at=dead_at,
            hold_ms=hold_ms,
        )
        for entry_id, status in zip(chunk, statuses, strict=True):
            if status == "moved":
                done.append(entry_id)
            else:
                why[str(status)] += 1
    # The gate's script wrote them: they join their error group here (by their reason).
    group_latest(client, keys, stream, len(done))
    return ActionResult(done, not_done(ids, done), detail=describe_skips(why))


def gate_keys(
    client: redis.Redis, keys: Keys, stream: str, ids: list[str], agent: str = ""
) -> list[str]:
    """The gate record of agent ``agent``'s run of each entry's event ("" for an entry that
    is gone or does not decode), from one pipelined read. Entries never change, so the hash
    stays right."""
    with client.pipeline(transaction=False) as pipe:
        for entry_id in ids:
            pipe.xrange(stream, entry_id, entry_id, count=1)
        replies = pipe.execute()
    return [
        gate_key(keys, reply[0][1].get(EVENT_FIELD) if reply else None, stream, agent)
        for reply in replies
    ]


# -- pausing a group ---------------------------------------------------------------------


def pause(client: redis.Redis, keys: Keys, stream: str, group: str, by: str) -> None:
    """Workers of the group start no new entry from now on and finish what they hold."""
    key = keys.paused(stream, group)
    client.set(key, f"{by} at {datetime.now(UTC).isoformat()}")
    client.publish(keys.pause_channel, key)  # after the SET: a worker told reads it


def resume(client: redis.Redis, keys: Keys, stream: str, group: str) -> bool:
    """True if the group was paused."""
    key = keys.paused(stream, group)
    was_paused = bool(client.delete(key))
    client.publish(keys.pause_channel, key)
    return was_paused


def paused(client: redis.Redis, keys: Keys, stream: str, group: str) -> str | None:
    """``"<who> at <ISO time>"`` while the group is paused, else None."""
    value = client.get(keys.paused(stream, group))
    return None if value is None else str(value)


@dataclass(frozen=True, slots=True)
class Pause:
    """Who paused a group and when (None: a value written by hand, shown as it is)."""

    by: str
    at: datetime | None


def parse_pause(value: str) -> Pause:
    """Split what ``pause`` stores, ``"<who> at <ISO time>"``, into its two parts; the
    stored format is kept as it is so running workers and older values stay readable."""
    who, sep, when = value.rpartition(" at ")
    if sep:
        try:
            at = datetime.fromisoformat(when)
        except ValueError:
            return Pause(value, None)
        return Pause(who, at if at.tzinfo else at.replace(tzinfo=UTC))
    return Pause(value, None)
