"""Cancel: an event's run ends ``cancelled`` and its entry leaves the pending list
(``operations.cancel`` by event hash: the event page, the CLI, the API;
``operations.cancel_entries`` for pending rows). docs/actions.md#cancel.

What happens depends on the event's gate record, read and changed in one Lua call
(``workers/gate/lua/cancel.lua``):

- **running** (an agent holds a live lease): the request is written on the record and
  announced on ``Keys.cancel_channel``. The worker stops the agent and settles the run
  itself (``workers/cancel/``): the action returns at once, "cancel requested";
- **waiting** (pending, not running: never started, a retry's backoff, a rate budget's
  wait, a dead worker's expired lease; or a run that gave back its slot to wait,
  ``ctx.sleep`` / ``ctx.wait_for_event``): its pending entries are acked and the record
  becomes ``cancelled`` in that call, then its wait ends (workers/waits/) and the run row
  is closed ``cancelled`` here;
- **finished** (succeeded, dead-lettered, cancelled): refused, nothing changes.

Either way the record is ``cancelled`` (a hit, like done) for as long as a done record is
kept, and the row is final, so no copy of the event runs again. ``force_rerun`` still may.
"""

from __future__ import annotations

from collections import Counter
from typing import Any, cast

import redis
from django.utils import timezone

from workers.core.errors import ActionRefused, InvalidAction
from workers.core.events import stored_hash
from workers.core.fanout import group_of, run_hash
from workers.core.keys import DEFAULT_GROUP, DEFAULT_STREAM, EVENT_FIELD, Keys
from workers.gate import cancel_gate
from workers.models import AgentRun, RunStatus
from workers.operations import inputs, lookup, steps
from workers.operations.actions import agent_in, describe_skips, pending_ids
from workers.operations.redrive import ActionResult, not_done, split_ids
from workers.operations.steps import DIRECT_MAX
from workers.store.audit import Action, ActionOutcome, Actor, Entry, ids_target
from workers.waits.cancel import cancel_waits

FINISHED = (RunStatus.SUCCEEDED, RunStatus.DEAD, RunStatus.CANCELLED)
# How long a cancelled gate record is kept: as long as a done one by default
# (STREAMDESK_DONE_TTL_S); past it, the cancelled run row still refuses the event.
CANCELLED_TTL_S = 7 * 24 * 3600
# An event with no run row is looked for among this many pending entries per group.
PENDING_SCAN_MAX = 10_000
PAGE = 500


def cancel(
    actor: Actor,
    event_hash: str,
    reason: str = "",
    *,
    client: redis.Redis,
    keys: Keys,
    home: str = DEFAULT_GROUP,
) -> ActionOutcome:
    """Cancel the run of ``event_hash`` (a run's hash: one agent's run of an event; for an
    agent without a name, the event's hash), running or waiting; refused once it finished.
    ``home``: the home group's name: the run's entries are acked in its agent's group only,
    so another agent's run of the same event goes on."""
    event_hash, reason = inputs.event_hash(event_hash), inputs.reason(reason, required=False)
    entry = Entry(actor, Action.CANCEL, target={"event_hash": event_hash}, reason=reason)
    return steps.run(entry, lambda: _by_hash(entry, client, keys, event_hash, home))


def cancel_entries(
    actor: Actor,
    stream: str,
    group: str,
    ids: list[str],
    reason: str = "",
    dry_run: bool = False,
    *,
    client: redis.Redis,
    keys: Keys,
    home: str = DEFAULT_GROUP,
) -> ActionOutcome:
    """Cancel the group's runs of pending entries (the pending rows' Cancel button): the
    runs of ``group``'s agent (``home``: the home group's name), not another agent's."""
    stream, group, ids = inputs.stream(stream), inputs.name("group", group), inputs.entry_ids(ids)
    reason = inputs.reason(reason, required=False)
    if len(ids) > DIRECT_MAX:
        raise InvalidAction("ids", f"cancel at most {DIRECT_MAX} entries at once")
    entry = Entry(actor, Action.CANCEL, stream, group, ids_target(ids), reason)
    c, k = client, keys
    return steps.on_ids(
        entry,
        ids,
        dry_run,
        would=lambda: lookup.still_pending(c, stream, group, ids),
        act=lambda: _entries(entry, c, k, ids, agent_in(home, group)),
        job_params={},
    )


def _by_hash(entry: Entry, client: redis.Redis, keys: Keys, event_hash: str, home: str) -> None:
    short = event_hash[:12]
    run = AgentRun.objects.filter(event_hash=event_hash).first()
    if run is not None and run.status in FINISHED:
        raise ActionRefused(f"event {short} already finished ({run.status}): nothing to cancel")
    # A run's entry is acked in its own agent's group alone: the other agents' runs of the
    # event are theirs.
    found = (
        (run.stream, [(group_of(home, run.agent), run.entry_id)])
        if run is not None
        else find_pending(client, keys, event_hash, home)
    )
    if found is None:
        raise ActionRefused(f"no run and no pending entry of event {short}: unknown event hash")
    stream, pairs = found
    entry.stream = stream
    agent = agent_in(home, pairs[0][0]) if pairs else ""
    status = _cancel_one(entry, client, keys, stream, event_hash, pairs, agent)
    if status not in ("requested", "stopped"):
        raise ActionRefused(f"event {short}: {REFUSALS[status]}")


REFUSALS = {
    "done": "already finished (succeeded): nothing to cancel",
    "cancelled": "already cancelled",
    "none": "not running and no entry of it is pending: nothing to cancel",
}


def _cancel_one(
    entry: Entry,
    client: redis.Redis,
    keys: Keys,
    stream: str,
    event_hash: str,
    pairs: list[tuple[str, str]],
    agent: str = "",
) -> str:
    """One run (of agent ``agent``): the gate's answer, acted on; ``pairs``: its ``(group,
    entry id)`` pending entries, acked unless it runs. Fills ``entry`` as it goes."""
    entry_ids = list(dict.fromkeys(e for _, e in pairs))
    by, reason = entry.actor.name, entry.reason
    # Before the gate: a worker may end the run the moment it is asked, and its ``cancelled``
    # step must come after the request's on the timeline.
    asked_at = timezone.now()
    status, acked = cancel_gate(
        client, keys, stream, event_hash, pairs, by=by, reason=reason, ttl_s=CANCELLED_TTL_S
    )
    detail = f"cancelled by {by}" + (f": {reason}" if reason else "")
    # Imported here: the timeline needs models.
    from workers.store.cancelled import close_cancelled_by_hand, note_cancel_requested

    if status == "requested":
        asked = f"cancel requested by {by}" + (f": {reason}" if reason else "")
        note_cancel_requested(stream, event_hash, entry_ids, asked, by, asked_at)
        client.publish(keys.cancel_channel, event_hash)  # after the record: a worker told reads it
        entry.detail = "cancel requested: its worker stops the agent and ends the run cancelled"
    elif status == "stopped":
        # A run that waits (workers/waits/): its wait ends too, nothing brings it back.
        cancel_waits(client, keys, stream, [event_hash], by)
        was = close_cancelled_by_hand(client, stream, event_hash, entry_ids, detail, by, agent)
        entries = f"{acked} pending entr{'y' if acked == 1 else 'ies'} acked"
        entry.detail = f"cancelled ({f'the run was {was}' if was else 'never started'}); {entries}"
    if status in ("requested", "stopped"):
        entry.count += 1
        entry.done_ids += entry_ids
    return status


def _entries(
    entry: Entry, client: redis.Redis, keys: Keys, ids: list[str], agent: str
) -> ActionResult:
    valid, malformed = split_ids(ids)
    why = Counter(malformed=len(malformed))
    done: list[str] = []
    hashes = hashes_of(client, entry.stream, valid, agent)
    for entry_id, event_hash in zip(valid, hashes, strict=True):
        if not event_hash:
            why["gone"] += 1  # gone, or an envelope that never had a hash: dead-letter it
            continue
        pairs = [(entry.group, entry_id)]
        status = _cancel_one(entry, client, keys, entry.stream, event_hash, pairs, agent)
        if status in ("requested", "stopped"):
            done.append(entry_id)
        else:
            why[status] += 1
    # One event: what became of it; several: only what was skipped.
    parts = [entry.detail] if len(done) == 1 else []
    parts += [describe_skips(why)] if any(why.values()) else []
    return ActionResult(done, not_done(ids, done), detail="; ".join(parts))


def groups_of(client: redis.Redis, stream: str) -> list[str]:
    try:
        rows = cast(list[dict[str, Any]], client.xinfo_groups(stream))
    except redis.ResponseError:  # no such stream: nothing is pending
        return []
    return [str(row["name"]) for row in rows]


def hashes_of(client: redis.Redis, stream: str, ids: list[str], agent: str = "") -> list[str]:
    """Agent ``agent``'s run hash of each entry's event ("" for an entry gone or one that
    does not decode)."""
    with client.pipeline(transaction=False) as pipe:
        for entry_id in ids:
            pipe.xrange(stream, entry_id, entry_id, count=1)
        replies: list[Any] = pipe.execute()
    hashes = [stored_hash(reply[0][1].get(EVENT_FIELD)) if reply else "" for reply in replies]
    return [run_hash(h, agent) if h else "" for h in hashes]


def find_pending(
    client: redis.Redis, keys: Keys, event_hash: str, home: str = DEFAULT_GROUP
) -> tuple[str, list[tuple[str, str]]] | None:
    """A run that has no row (waiting, or running its first attempt: a running entry is
    pending too): its ``(group, entry id)`` pending entries, looked for among the first
    ``PENDING_SCAN_MAX`` pending entries of each group of each known stream (those the
    streams index names, which a stream joins with its first counter, and the default),
    each group's entries by its own agent's run hash (``home``: the home group)."""
    known = {str(s) for s in cast(set[Any], client.smembers(keys.streams_index))}
    for stream in sorted(known | {DEFAULT_STREAM}):
        found: list[tuple[str, str]] = []
        for group in groups_of(client, stream):
            agent = agent_in(home, group)
            found += [(group, e) for e in _pending_with(client, stream, group, event_hash, agent)]
        if found:
            return stream, list(dict.fromkeys(found))
    return None


def _pending_with(
    client: redis.Redis, stream: str, group: str, event_hash: str, agent: str
) -> list[str]:
    found: list[str] = []
    after: str | None = None
    for _ in range(PENDING_SCAN_MAX // PAGE):
        ids = pending_ids(client, stream, group, after=after, count=PAGE)
        hashes = hashes_of(client, stream, ids, agent)
        found += [i for i, h in zip(ids, hashes, strict=True) if h == event_hash]
        if len(ids) < PAGE:
            break
        after = ids[-1]
    return found
