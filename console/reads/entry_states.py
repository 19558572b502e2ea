"""Each listed entry's state (done, failed, pending, dead) from the gate, the PEL and the run.

Bounded per page: one pipelined round trip (the gate record of each entry, and XPENDING over
the page's id range for each group, with a count bound) and two indexed database queries (the
runs by unique event hash, the dead-lettered steps by stream and entry id). The rule,
``judge``, is plain Python; docs/console.md ("Reading the numbers") states it in words.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Any, cast

import redis

from workers.core.keys import Keys
from workers.gate import GateState, queue_gate_states

# XPENDING over a page's id range returns at most this many per page row: entries deleted
# from the stream stay in the PEL, so a range can hold more pending ids than listed rows.
PEL_ROWS_PER_ENTRY = 2


class State(StrEnum):
    DONE = "done"
    FAILED = "failed"
    PENDING = "pending"
    DEAD = "dead"
    UNKNOWN = "unknown"


@dataclass(frozen=True, slots=True)
class EntryState:
    state: State
    detail: str  # one line for the title: why this state

    @property
    def tone(self) -> str:
        """The badge class the pages use for it."""
        return {State.DONE: "ok", State.FAILED: "warn", State.DEAD: "bad"}.get(self.state, "")


@dataclass(frozen=True, slots=True)
class Facts:
    """What is known of one entry when the page is read."""

    event_hash: str | None  # None: the envelope does not decode
    gate: str | None  # the gate record's state: running, done, released; None: no record
    pending_in: list[tuple[str, int]]  # (group, deliveries) of each PEL holding the entry
    run: str | None  # the AgentRun status (running, succeeded, failed, dead); None: no row
    dead_lettered: bool  # the timeline has a dead_lettered step for this entry id
    delivered: bool  # some group has read past it
    unknown: bool = False  # the PEL read stopped at its bound before this id


def judge(f: Facts) -> EntryState:
    """The rule, first match wins (docs/console.md, "Reading the numbers")."""
    if f.unknown:
        return EntryState(State.UNKNOWN, "more pending ids in this range than one read covers")
    if f.pending_in:
        where = ", ".join(f"{group} ({n} deliveries)" for group, n in f.pending_in)
        # Not the gate's "released" alone: a deferral (rate budget) and a shutdown release it
        # too, and neither is a failure; the run row says failed only after the agent raised.
        if f.run in ("failed", "dead"):
            return EntryState(State.FAILED, f"failed; pending in {where} for its retry")
        return EntryState(State.PENDING, f"pending in {where}")
    if f.run == "succeeded" or f.gate == GateState.DONE:
        return EntryState(State.DONE, "its event ran and committed (from this entry or a copy)")
    if f.dead_lettered or f.run == "dead":
        return EntryState(State.DEAD, "dead-lettered")
    if f.event_hash is None and f.delivered:
        return EntryState(State.DEAD, "does not decode: dead-lettered when read")
    if f.run == "failed":
        return EntryState(State.FAILED, "its run failed and the entry is no longer pending")
    if f.run == "running" or f.gate == GateState.RUNNING:
        return EntryState(State.PENDING, "its event is running from another entry")
    if f.delivered:
        return EntryState(
            State.UNKNOWN, "read, but nothing recorded: read before the group existed, or pruned"
        )
    return EntryState(State.PENDING, "not read by any group yet")


def _id(entry_id: str) -> tuple[int, int]:
    ms, _, seq = entry_id.partition("-")
    return (int(ms), int(seq or 0)) if ms.isdigit() and (not seq or seq.isdigit()) else (-1, -1)


@dataclass(frozen=True, slots=True)
class Group:
    name: str
    last_delivered_id: str


# With several agents on a type (issue 31) an event has a run per agent: the entry reads as
# its least finished one, so an entry is done only once every agent's run is.
UNFINISHED_FIRST = ("running", "waiting", "failed", "dead", "cancelled", "succeeded")


def least_finished(statuses: list[str]) -> str:
    """The status the entry reads as, of its event's runs' statuses."""
    rank = {status: n for n, status in enumerate(UNFINISHED_FIRST)}
    return min(statuses, key=lambda s: rank.get(s, -1))


def _records(stream: str, ids: list[str], hashes: set[str]) -> tuple[dict[str, str], set[str]]:
    """From the database: each event hash's run status (the unique index on the run hash,
    the index on ``event_key`` for named agents' runs; their least finished, see above) and
    the entries with a dead_lettered step (the stream/entry index)."""
    from django.db.models import Q

    from workers.core.steps import Kind
    from workers.models import AgentRun, TimelineStep

    found: dict[str, list[str]] = {}
    if hashes:
        runs = AgentRun.objects.filter(Q(event_hash__in=hashes) | Q(event_key__in=hashes))
        for run_hash, key, status in runs.values_list("event_hash", "event_key", "status"):
            found.setdefault(key or run_hash, []).append(status)
    dead = TimelineStep.objects.filter(
        stream=stream, entry_id__in=ids, kind=Kind.DEAD_LETTERED
    ).values_list("entry_id", flat=True)
    return {h: least_finished(statuses) for h, statuses in found.items()}, set(dead)


def _pending(
    groups: list[Group], replies: list[Any], bound: int
) -> tuple[dict[str, list[tuple[str, int]]], tuple[int, int] | None]:
    """Who holds each id pending, and where a read that hit its bound stopped (later ids of
    the page are then unknown)."""
    pending: dict[str, list[tuple[str, int]]] = {}
    cut: tuple[int, int] | None = None
    for g, reply in zip(groups, replies, strict=True):
        for p in cast(list[dict[str, Any]], reply or []):
            pending.setdefault(str(p["message_id"]), []).append((g.name, int(p["times_delivered"])))
        if reply and len(reply) >= bound:
            last = _id(str(reply[-1]["message_id"]))
            cut = last if cut is None else min(cut, last)
    return pending, cut


def read_states(
    client: redis.Redis,
    keys: Keys,
    stream: str,
    entries: list[tuple[str, str | None]],
    groups: list[Group],
) -> list[EntryState]:
    """The state of each ``(entry id, event hash)`` of a page, in order."""
    if not entries:
        return []
    if not groups:
        return [EntryState(State.UNKNOWN, "no consumer group reads this stream")] * len(entries)
    ids = [entry_id for entry_id, _ in entries]
    hashes = [h for _, h in entries if h]
    bound = len(ids) * PEL_ROWS_PER_ENTRY
    with client.pipeline(transaction=False) as pipe:
        queue_gate_states(pipe, keys, hashes, stream)
        for g in groups:
            pipe.xpending_range(
                stream, g.name, min=min(ids, key=_id), max=max(ids, key=_id), count=bound
            )
        # A group deleted since the sample answers NOGROUP: its PEL reads as empty rather
        # than failing the page (the next sample drops the group).
        replies = [
            None if isinstance(reply, redis.ResponseError) else reply
            for reply in pipe.execute(raise_on_error=False)
        ]
    gates = dict(zip(hashes, cast(list[str | None], replies[: len(hashes)]), strict=True))
    pending, cut = _pending(groups, replies[len(hashes) :], bound)
    runs, dead = _records(stream, ids, set(hashes))
    read_to = max(_id(g.last_delivered_id) for g in groups)
    return [
        judge(
            Facts(
                event_hash=h,
                gate=gates.get(h) if h else None,
                pending_in=pending.get(entry_id, []),
                run=runs.get(h) if h else None,
                dead_lettered=entry_id in dead,
                delivered=_id(entry_id) <= read_to,
                unknown=cut is not None and _id(entry_id) > cut and entry_id not in pending,
            )
        )
        for entry_id, h in entries
    ]
