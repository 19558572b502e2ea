"""Force re-run: the one deliberate second execution of an event (``operations.force_rerun``).

Its ``AgentRun`` must have finished. The gate record is cleared first (``clear_gate``
refuses while an agent runs the event), then the row is marked ``failed`` with the fence
cleared: the engine's duplicate check counts only ``succeeded`` rows as done, and a commit
needs an empty fence, so the new attempt runs and commits. Its durable steps and graph
checkpoints are discarded, so the agent runs from the start. Last, the original event (from
its stream entry, else from its dead letter) is published again with ``rerun_of``.
"""

from __future__ import annotations

from datetime import datetime

import redis

from workers.core.errors import ActionRefused
from workers.core.events import stored_hash
from workers.core.fanout import REPLAY_FIELD, group_of, run_hash
from workers.core.keys import DEFAULT_GROUP, Keys
from workers.models import AgentRun, GraphCheckpoint, GraphWrite, RunStatus, StepResult
from workers.operations import actions, inputs, lookup, steps
from workers.operations.actions import DeadFilter
from workers.store.audit import Action, ActionOutcome, Actor, Entry

FINISHED = (RunStatus.SUCCEEDED, RunStatus.FAILED, RunStatus.DEAD, RunStatus.CANCELLED)
# Dead letters searched for a run's event: from a little before its row was created (clock
# skew between workers and Redis), and at most this many.
CLOCK_MARGIN_MS = 60_000
DEAD_SEARCH_MAX = 50_000
PAGE = 1000


def force_rerun(
    actor: Actor,
    event_hash: str,
    reason: str,
    *,
    client: redis.Redis,
    keys: Keys,
    home: str = DEFAULT_GROUP,
) -> ActionOutcome:
    """Run a finished run once more, on purpose (a reason is required). ``event_hash``:
    the run's hash (for an agent without a name, the event's). Only its agent runs again:
    the event is published for that agent's group alone (``home``: the home group)."""
    event_hash, reason = inputs.event_hash(event_hash), inputs.reason(reason, required=True)
    entry = Entry(actor, Action.FORCE_RERUN, target={"event_hash": event_hash}, reason=reason)
    c, k = client, keys
    return steps.run(entry, lambda: force(entry, c, k, event_hash, home))


def force(entry: Entry, client: redis.Redis, keys: Keys, event_hash: str, home: str) -> None:
    """Fills ``entry`` as it goes, so a failure half way is recorded with what was done."""
    run = finished_run(event_hash)
    entry.stream = run.stream
    raw, salt = original_event(client, run), replay_salt(client, run)
    actions.clear_gate(client, keys, event_hash, run.stream)
    entry.detail = "gate record cleared"
    changed = AgentRun.objects.filter(pk=run.pk, status__in=FINISHED).update(
        status=RunStatus.FAILED,
        fence="",
        error=f"force re-run by {entry.actor.name}: {entry.reason}",
    )
    if not changed:
        raise ActionRefused(f"event {event_hash[:12]} started again meanwhile: nothing re-run")
    entry.detail += f"; run marked failed (was {run.status})"
    forgotten = forget_progress(event_hash)
    group = group_of(home, run.agent)
    new_id = actions.republish(
        client, run.stream, raw, rerun_of=run.entry_id, group=group, replay=salt
    )
    entry.count, entry.done_ids, entry.new_ids = 1, [run.entry_id], [new_id]
    entry.detail = (
        f"re-published {run.entry_id} as {new_id} (the run was {run.status}; "
        f"{forgotten} stored steps and checkpoints discarded)"
    )


def forget_progress(event_hash: str) -> int:
    """A re-run runs the agent from the start: its stored steps and graph checkpoints would
    otherwise replay the first run's results. (A redriven dead letter keeps them, and resumes
    after its last stored step.) Side effects pass the same idempotency keys again."""
    deleted = StepResult.objects.filter(event_hash=event_hash).delete()[0]
    deleted += GraphWrite.objects.filter(thread_id=event_hash).delete()[0]
    return deleted + GraphCheckpoint.objects.filter(thread_id=event_hash).delete()[0]


def finished_run(event_hash: str) -> AgentRun:
    run = AgentRun.objects.filter(event_hash=event_hash).first()
    if run is None:
        raise ActionRefused(f"no run of event {event_hash[:12]}: nothing to re-run")
    if run.status not in FINISHED:
        raise ActionRefused(f"event {event_hash[:12]} is {run.status}: re-run it once it ends")
    return run


def original_event(client: redis.Redis, run: AgentRun) -> str:
    """The raw event: its stream entry if still there, else its dead letter."""
    raw = lookup.entry_event(client, run.stream, run.entry_id)
    if raw is None:
        raw = _from_dead_letters(client, run)
    if raw is None:
        raise ActionRefused(
            f"the event of {run.event_hash[:12]} is gone: stream entry {run.entry_id} was "
            "deleted and no dead letter holds it; publish it again instead"
        )
    # A named agent's row is keyed by its run hash; the event's own is beside it (rows from
    # before agents had names have none: their run hash is the event's).
    if stored_hash(raw) != (run.event_key or run.event_hash):
        raise ActionRefused(
            f"stream entry {run.entry_id} now holds another event (the stream was recreated?)"
        )
    return raw


def replay_salt(client: redis.Redis, run: AgentRun) -> str:
    """A forced replay's run is keyed by its salt (``REPLAY_FIELD`` on its entry, alone):
    its re-run carries it, or it would be the first run's again (a hit, nothing run). ""
    for any other run; refused when the entry that had it is gone."""
    if not run.replay_of:
        return ""
    salt = (lookup.entry_fields(client, run.stream, run.entry_id) or {}).get(REPLAY_FIELD, "")
    if not salt or run_hash(run.event_key, run.agent, salt) != run.event_hash:
        raise ActionRefused(
            f"run {run.event_hash[:12]} is a replay and its stream entry {run.entry_id} is "
            "gone: replay the event again instead"
        )
    return salt


def _from_dead_letters(client: redis.Redis, run: AgentRun) -> str | None:
    since_ms = max(_ms(run.created_at) - CLOCK_MARGIN_MS, 0)
    window = DeadFilter(since_ms=since_ms)
    after: str | None = None
    for _ in range(DEAD_SEARCH_MAX // PAGE):
        letters, after = actions.scan_dead(client, run.stream, window, after, PAGE)
        for _, fields in letters:
            if fields.get("entry_id") == run.entry_id and fields.get("stream") == run.stream:
                return fields.get("event")
        if after is None:
            return None
    return None


def _ms(at: datetime) -> int:
    return int(at.timestamp() * 1000)
