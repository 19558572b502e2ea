"""Starting a replay: its dry run (the preview, audited) or its bulk job.

The one door the command line and the console go through: ``replay`` checks the range
(``InvalidAction`` for nothing in it), writes the action's one audit record, and queues
the job (``workers/operations/jobs.py`` runs it; ``JOB_KINDS`` gives a runner its work).
"""

from __future__ import annotations

import redis

from workers.core.errors import InvalidAction
from workers.core.keys import logical_stream
from workers.operations import jobs
from workers.replay.bounds import FIRST, LAST, as_time, id_order
from workers.replay.copying import ReplayWork
from workers.replay.groups import ensure_group
from workers.replay.plan import Replay
from workers.replay.preview import ReplayPreview, preview
from workers.store.audit import Action, ActionOutcome, Actor, Entry, Result

# Copies are cheap for Redis (a pipelined XADD each), and the workers, not this job, set the
# pace at which they run: a job is paced only so one batch never hogs the server.
RATE_PER_S = 200_000.0
# The batch a foreground replay (manage.py replay) reads and copies at once.
BATCH = 2_000
# What a runner passes to ``jobs.run`` / ``JobRunner`` to work replay jobs.
JOB_KINDS = {Action.REPLAY.value: ReplayWork}


def checked_preview(client: redis.Redis, replay: Replay) -> ReplayPreview:
    """The preview; ``InvalidAction`` when the range holds no entry at all."""
    found = preview(client, replay)
    if found.in_range == 0:
        raise InvalidAction("from", f"nothing in range: {_empty(replay, found)}")
    return found


def _empty(replay: Replay, found: ReplayPreview) -> str:
    if not any(r.length for r in found.reach):
        return f"{', '.join(replay.streams)} has no entries"
    oldest = min((r.first_id for r in found.reach if r.first_id), key=id_order)
    if replay.end != LAST and id_order(replay.end) < id_order(oldest):
        return (
            f"the range ends at {replay.end} ({as_time(replay.end)}), before the oldest entry "
            f"left, {found.oldest()}: older ones were trimmed"
        )
    start = "the oldest entry" if replay.start == FIRST else replay.start
    end = "the newest" if replay.end == LAST else replay.end
    return f"no entry from {start} to {end}; the stream reaches back to {found.oldest()}"


def replay(
    actor: Actor,
    plan: Replay,
    *,
    dry_run: bool = False,
    reason: str = "",
    client: redis.Redis,
) -> ActionOutcome:
    """Preview (``dry_run``: only its audit record is written) or queue the replay."""
    stream = logical_stream(plan.streams[0]) if plan.streams else ""
    entry = Entry(actor, Action.REPLAY, stream, plan.group, {"filter": plan.as_params()}, reason)
    found = entry.guarded(lambda: checked_preview(client, plan))
    entry.count, entry.skipped = found.would_run, found.already_done
    entry.detail = found.summary()
    if dry_run:
        entry.detail = f"dry run: nothing changed; {entry.detail}"
        return entry.write(Result.DRY_RUN)
    if not found.would_run:
        entry.count = 0
        entry.detail = f"nothing to replay: {entry.detail}"
        return entry.write(Result.NOOP)
    for each in plan.streams:  # before any copy: the copies must not start before it
        ensure_group(client, each, plan.group, plan.home)
    params = {"filter": plan.with_ends(list(found.ends)).as_params()}
    job = jobs.create(
        actor,
        Action.REPLAY,
        stream,
        plan.group,
        params,
        reason,
        total=found.would_run,
        rate_per_s=RATE_PER_S,
    )
    return jobs.outcome(job)
