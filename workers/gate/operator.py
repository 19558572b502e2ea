"""The operators' side of the gate: reading records, clearing one, holding while dead-lettering.

Sync client (``decode_responses=True``); ``workers/operations/actions.py`` and
``workers/operations/redrive.py`` call these and keep the chunking, the stream work and the
reporting.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, cast

import redis

from workers.core.errors import ActionRefused
from workers.core.events import stored_hash
from workers.core.fanout import run_hash
from workers.core.keys import Keys, dead_stream
from workers.gate.scripts import lua
from workers.gate.states import HOLDER_PREFIX, GateState

CLEAR = lua("clear")
CANCEL = lua("cancel")
DEAD_LETTER = lua("dead_letter")
# Records read per pipeline in gate_done: bounded like every operator action's chunk.
READ_CHUNK = 500


def gate_key(keys: Keys, raw_event: str | None, stream: str = "", agent: str = "") -> str:
    """The gate record of agent ``agent``'s run of a raw event of ``stream`` (a partition's
    are in its slot; each agent has its own, workers/core/fanout.py), "" if the event does
    not decode (it never had one)."""
    event_hash = stored_hash(raw_event)
    return keys.gate(run_hash(event_hash, agent), stream) if event_hash else ""


def gate_done(
    client: redis.Redis, keys: Keys, raw_events: list[str], stream: str = "", agent: str = ""
) -> list[bool]:
    """Per raw event of ``stream``: does agent ``agent``'s gate record say done? (A redrive
    of it would be a hit.) An event that does not decode has no record: False."""
    records = [gate_key(keys, raw, stream, agent) for raw in raw_events]
    states: dict[str, Any] = {}
    unique = sorted({r for r in records if r})
    for start in range(0, len(unique), READ_CHUNK):
        part = unique[start : start + READ_CHUNK]
        with client.pipeline(transaction=False) as pipe:
            for record in part:
                pipe.hget(record, "state")
            states.update(zip(part, pipe.execute(), strict=True))
    return [bool(r) and states.get(r) == GateState.DONE for r in records]


def queue_gate_states(
    pipe: redis.client.Pipeline, keys: Keys, event_hashes: Iterable[str], stream: str = ""
) -> None:
    """Queue a read of each event hash's gate state on the caller's pipeline: one reply per
    hash, its state or None when there is no record. Callers batch it with their own reads,
    so reading the gate costs them no round trip of its own."""
    for event_hash in event_hashes:
        pipe.hget(keys.gate(event_hash, stream), "state")


@dataclass(frozen=True, slots=True)
class AgentLease:
    """An agent's live lease on an event: who runs it (``<consumer>/<entry id>``) and for
    how long the lease still holds, on the server's clock."""

    owner: str
    left_ms: int

    @property
    def consumer(self) -> str:
        return self.owner.rsplit("/", 1)[0]


def live_lease(
    client: redis.Redis, keys: Keys, event_hash: str, stream: str = ""
) -> AgentLease | None:
    """The agent's lease if one runs the event now (one round trip), else None; an
    operator's dead-letter hold is no agent's."""
    with client.pipeline(transaction=False) as pipe:
        pipe.hmget(keys.gate(event_hash, stream), ["state", "owner", "lease_until"])
        pipe.time()
        (state, owner, lease_until), (secs, micros) = pipe.execute()
    left_ms = int(lease_until or 0) - (int(secs) * 1000 + int(micros) // 1000)
    if state != GateState.RUNNING or left_ms <= 0 or not owner:
        return None
    return None if str(owner).startswith(HOLDER_PREFIX) else AgentLease(str(owner), left_ms)


def clear_gate(client: redis.Redis, keys: Keys, event_hash: str, stream: str = "") -> bool:
    """Forget that an event ran, so it may run again (force re-run). True if there was a
    record. The record becomes ``released`` rather than deleted, so fencing tokens keep
    growing. Refused while an agent runs the event: two would run at once."""
    script = client.register_script(CLEAR)
    cleared = int(script(keys=[keys.gate(event_hash, stream)], args=[HOLDER_PREFIX]))
    if cleared < 0:
        raise ActionRefused(f"event {event_hash[:12]} is running now: re-run it once it ends")
    return cleared == 1


def cancel_gate(
    client: redis.Redis,
    keys: Keys,
    stream: str,
    event_hash: str,
    entries: list[tuple[str, str]],
    *,
    by: str,
    reason: str,
    ttl_s: int,
) -> tuple[str, int]:
    """An operator's cancel of one event, in one Lua call: ``(status, entries acked)``.
    ``entries``: ``(group, entry id)`` pairs acked if the event is not running. The status
    (requested, stopped, done, cancelled or none) is explained in ``lua/cancel.lua``."""
    args: list[Any] = [by, reason, ttl_s, HOLDER_PREFIX]
    for group, entry_id in entries:
        args += [group, entry_id]
    script_keys = [keys.gate(event_hash, stream), stream, keys.stats(stream)]
    # Counted for the run's group too (its agent's counters), as a worker's cancel is.
    script_keys += [keys.group_stats(stream, entries[0][0])] if entries else []
    status, acked = cast(list[Any], client.register_script(CANCEL)(keys=script_keys, args=args))
    return str(status), int(acked)


def dead_letter_chunk(
    client: redis.Redis,
    keys: Keys,
    stream: str,
    group: str,
    entries: list[tuple[str, str]],
    *,
    reason: str,
    by: str,
    dead_at: str,
    hold_ms: int,
) -> list[str]:
    """Dead-letter ``(entry id, gate record or "")`` pairs in one Lua call, holding each moved
    entry's record under ``HOLDER_PREFIX + by`` for ``hold_ms``. One status per entry: moved,
    gone, deleted, running or done (lua/dead_letter.lua says what each means)."""
    records = sorted({g for _, g in entries if g})
    index = {key: n for n, key in enumerate(records, start=1)}
    args: list[Any] = [group, reason, by, dead_at, hold_ms, HOLDER_PREFIX]
    for entry_id, gate in entries:
        args += [entry_id, index.get(gate, 0)]
    own = keys.group_stats(stream, group)  # the group's agent's counters
    script_keys = [stream, dead_stream(stream), keys.stats(stream), own, *records]
    statuses = client.register_script(DEAD_LETTER)(keys=script_keys, args=args)
    return [str(s) for s in cast(list[Any], statuses)]
