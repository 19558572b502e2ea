"""Operator actions, one function each: the single implementation the console, the command
line and the API call (docs/actions.md).

Every function checks its input (``InvalidAction`` names the bad field; nothing is recorded
for input that never became an action), does the action through ``actions.py``, and writes
exactly one ``AuditRecord``: ``ok`` when it did something, ``noop`` when it was asked and did
nothing; also for a dry run (``dry-run``: nothing changed, the count is what would be acted
on), a refusal (``refused``, then ``ActionRefused`` is raised: ``NoSuchGroup`` for a stream or
group that does not exist; a claim to a consumer that may not take entries raises
``NotAClaimTarget``, an ``InvalidAction``, after its record) and a failure (``failed``, or
``partial`` when some of it was done, then the error is raised: Redis errors as
``RedisUnavailable`` or ``ActionFailed``, cause kept). Over 1,000 entries, or a dead-letter
filter, becomes a bulk job (``jobs.py``): the outcome is then ``queued`` and its ``job_id``
names the job.
"""

from __future__ import annotations

import redis

from workers import action_steps as steps
from workers import actions, group_consumers, inputs, lookup, rerun, runtime
from workers.action_steps import DIRECT_MAX
from workers.actions import ActionResult, DeadFilter
from workers.audit import Action, ActionOutcome, Actor, Entry, ids_target
from workers.errors import InvalidAction
from workers.group_consumers import Target
from workers.keys import Keys
from workers.preview import Preview, already_done, preview_redrive

__all__ = [
    "DIRECT_MAX",
    "ActionOutcome",
    "Actor",
    "Preview",
    "claim",
    "claim_all",
    "dead_letter",
    "force_rerun",
    "pause",
    "preview_redrive",
    "purge",
    "redrive",
    "remove_consumer",
    "resume",
    "retry_now",
]

# retry_now makes entries look idle this much longer than the workers' claim idle time.
RETRY_MARGIN_MS = 1000


def claim(
    actor: Actor,
    stream: str,
    group: str,
    ids: list[str],
    consumer: str,
    dry_run: bool = False,
    *,
    target: Target = Target.LIVE,
    client: redis.Redis | None = None,
) -> ActionOutcome:
    """Move pending entries to ``consumer`` (delivery counts unchanged); ``target`` says
    which consumers may take them (``group_consumers.Target``; refused: InvalidAction)."""
    stream, group = inputs.stream(stream), inputs.name("group", group)
    ids, consumer = inputs.entry_ids(ids), inputs.name("consumer", consumer)
    entry = Entry(actor, Action.CLAIM, stream, group, ids_target(ids))
    c = steps.client_or_default(client)
    steps.read(
        entry,
        lambda: group_consumers.check(
            c, steps.keys_or_default(None), stream, group, consumer, target
        ),
    )
    return steps.on_ids(
        entry,
        ids,
        dry_run,
        would=lambda: lookup.still_pending(c, stream, group, ids),
        act=lambda: actions.claim(c, stream, group, ids, consumer),
        job_params={"consumer": consumer},
    )


def claim_all(
    actor: Actor,
    stream: str,
    group: str,
    from_consumer: str,
    to_consumer: str,
    dry_run: bool = False,
    *,
    target: Target = Target.LIVE,
    client: redis.Redis | None = None,
) -> ActionOutcome:
    """Every pending entry of ``from_consumer`` (an orphaned one) to ``to_consumer``."""
    stream, group = inputs.stream(stream), inputs.name("group", group)
    source, to = inputs.name("from_consumer", from_consumer), inputs.name("consumer", to_consumer)
    if source == to:
        raise InvalidAction("consumer", "claiming to the same consumer changes nothing")
    entry = Entry(actor, Action.CLAIM_ALL, stream, group, {"consumer": source, "to": to})
    c = steps.client_or_default(client)
    steps.read(
        entry,
        lambda: group_consumers.check(c, steps.keys_or_default(None), stream, group, to, target),
    )
    if dry_run:
        entry.count = lookup.consumer_pending(c, stream, group, source)
        entry.done_ids = actions.pending_ids(c, stream, group, source, count=DIRECT_MAX)
        return steps.as_dry_run(entry)
    ids = actions.pending_ids(c, stream, group, source, count=DIRECT_MAX + 1)
    if len(ids) > DIRECT_MAX:
        params = {"from_consumer": source, "consumer": to}
        total = lookup.consumer_pending(c, stream, group, source)
        return steps.queue(entry, params, total)
    return steps.apply(entry, lambda: actions.claim(c, stream, group, ids, to))


def remove_consumer(
    actor: Actor, stream: str, group: str, consumer: str, *, client: redis.Redis | None = None
) -> ActionOutcome:
    """Delete a consumer from the group; refused while it has pending entries."""
    stream, group = inputs.stream(stream), inputs.name("group", group)
    consumer = inputs.name("consumer", consumer)
    entry = Entry(actor, Action.REMOVE_CONSUMER, stream, group, {"consumer": consumer})
    c = steps.client_or_default(client)
    return steps.apply(entry, lambda: actions.remove_consumer(c, stream, group, consumer))


def retry_now(
    actor: Actor,
    stream: str,
    group: str,
    ids: list[str],
    dry_run: bool = False,
    *,
    client: redis.Redis | None = None,
    claim_idle_ms: int | None = None,
) -> ActionOutcome:
    """Let the next reclaim by any live worker take these pending entries now.
    ``claim_idle_ms``: the workers' setting (default: this process's engine config)."""
    stream, group, ids = inputs.stream(stream), inputs.name("group", group), inputs.entry_ids(ids)
    idle_ms = (claim_idle_ms or runtime.engine_config().claim_idle_ms) + RETRY_MARGIN_MS
    entry = Entry(actor, Action.RETRY, stream, group, ids_target(ids))
    c = steps.client_or_default(client)
    return steps.on_ids(
        entry,
        ids,
        dry_run,
        would=lambda: lookup.still_pending(c, stream, group, ids),
        act=lambda: actions.retry_now(c, stream, group, ids, idle_ms),
        job_params={"idle_ms": idle_ms},
    )


def dead_letter(
    actor: Actor,
    stream: str,
    group: str,
    ids: list[str],
    reason: str,
    dry_run: bool = False,
    *,
    client: redis.Redis | None = None,
    keys: Keys | None = None,
) -> ActionOutcome:
    """Move pending entries to the dead letters (a reason is required)."""
    stream, group, ids = inputs.stream(stream), inputs.name("group", group), inputs.entry_ids(ids)
    reason = inputs.reason(reason, required=True)
    entry = Entry(actor, Action.DEAD_LETTER, stream, group, ids_target(ids), reason)
    c, k = steps.client_or_default(client), steps.keys_or_default(keys)

    def act() -> ActionResult:
        # On the event's timeline like the engine's own (imported here: timeline needs models).
        from workers.timeline import insert_dead_lettered_by_hand

        result = actions.dead_letter(c, stream, group, ids, reason, actor.name, keys=k)
        insert_dead_lettered_by_hand(c, stream, result.done, f"by {actor.name}: {reason}")
        return result

    would = lambda: lookup.still_pending(c, stream, group, ids)  # noqa: E731
    return steps.on_ids(entry, ids, dry_run, would=would, act=act, job_params={})


def redrive(
    actor: Actor,
    stream: str,
    ids: list[str] | None = None,
    filter: DeadFilter | None = None,
    dry_run: bool = False,
    *,
    reason: str = "",
    skip_done: bool = False,
    client: redis.Redis | None = None,
    keys: Keys | None = None,
) -> ActionOutcome:
    """Put dead letters (ids, or every one a filter matches) back on the stream.
    ``skip_done``: letters whose event already ran (gate or database) are skipped, not sent."""
    stream, reason = inputs.stream(stream), inputs.reason(reason, required=False)
    c, k = steps.client_or_default(client), steps.keys_or_default(keys)
    ran = (lambda raws: [already_done(c, k, [raw]) > 0 for raw in raws]) if skip_done else None
    return steps.on_dead(
        Entry(actor, Action.REDRIVE, stream, reason=reason),
        c,
        k,
        *inputs.ids_or_filter(ids, filter),
        dry_run,
        act=lambda ids: actions.redrive(c, stream, ids, actor.name, ran=ran),
    )


def purge(
    actor: Actor,
    stream: str,
    ids: list[str] | None = None,
    filter: DeadFilter | None = None,
    *,
    reason: str,
    dry_run: bool = False,
    client: redis.Redis | None = None,
    keys: Keys | None = None,
) -> ActionOutcome:
    """Delete dead letters for good (ids, or every one a filter matches; a reason is required)."""
    stream, reason = inputs.stream(stream), inputs.reason(reason, required=True)
    c = steps.client_or_default(client)
    return steps.on_dead(
        Entry(actor, Action.PURGE, stream, reason=reason),
        c,
        steps.keys_or_default(keys),
        *inputs.ids_or_filter(ids, filter),
        dry_run,
        act=lambda ids: actions.purge(c, stream, ids),
    )


def force_rerun(
    actor: Actor,
    event_hash: str,
    reason: str,
    *,
    client: redis.Redis | None = None,
    keys: Keys | None = None,
) -> ActionOutcome:
    """Run a finished event once more, on purpose (a reason is required); see ``rerun.py``."""
    event_hash, reason = inputs.event_hash(event_hash), inputs.reason(reason, required=True)
    entry = Entry(actor, Action.FORCE_RERUN, target={"event_hash": event_hash}, reason=reason)
    c, k = steps.client_or_default(client), steps.keys_or_default(keys)
    return steps.run(entry, lambda: rerun.force(entry, c, k, event_hash))


def pause(
    actor: Actor,
    stream: str,
    group: str,
    dry_run: bool = False,
    *,
    client: redis.Redis | None = None,
    keys: Keys | None = None,
) -> ActionOutcome:
    """Workers of the group stop reading new entries within a second."""
    stream, group = inputs.stream(stream), inputs.name("group", group)
    entry = Entry(actor, Action.PAUSE, stream, group)
    c, k = steps.client_or_default(client), steps.keys_or_default(keys)
    if dry_run:
        already = actions.paused(c, k, stream, group)
        entry.count = int(already is None)
        entry.detail = f"already paused by {already}" if already else "would pause"
        return steps.as_dry_run(entry)

    def step() -> None:
        already = actions.paused(c, k, stream, group)
        if already is not None:
            entry.detail = f"already paused by {already}"
            return
        actions.pause(c, k, stream, group, actor.name)
        entry.count, entry.detail = 1, "paused"

    return steps.run(entry, step)


def resume(
    actor: Actor,
    stream: str,
    group: str,
    dry_run: bool = False,
    *,
    client: redis.Redis | None = None,
    keys: Keys | None = None,
) -> ActionOutcome:
    stream, group = inputs.stream(stream), inputs.name("group", group)
    entry = Entry(actor, Action.RESUME, stream, group)
    c, k = steps.client_or_default(client), steps.keys_or_default(keys)
    if dry_run:
        was_paused = actions.paused(c, k, stream, group) is not None
        entry.count = int(was_paused)
        entry.detail = "would resume" if was_paused else "was not paused"
        return steps.as_dry_run(entry)

    def step() -> None:
        was_paused = actions.resume(c, k, stream, group)
        entry.count = int(was_paused)
        entry.detail = "resumed" if was_paused else "was not paused"

    return steps.run(entry, step)
