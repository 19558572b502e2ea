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

from collections.abc import Callable
from dataclasses import replace
from typing import Any, TypeVar

import redis

from workers import actions, group_consumers, inputs, jobs, lookup, rerun, runtime
from workers.actions import ActionResult, DeadFilter
from workers.audit import Action, ActionOutcome, Actor, Entry, Result, failure_detail, ids_target
from workers.errors import ActionFailed, ActionRefused, InvalidAction, RedisUnavailable
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

T = TypeVar("T")
# Above this many entries an action runs as a bulk job, in batches at a bounded rate.
DIRECT_MAX = 1000
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
    c = _client(client)
    _read(entry, lambda: group_consumers.check(c, _keys(None), stream, group, consumer, target))
    return _on_ids(
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
    c = _client(client)
    _read(entry, lambda: group_consumers.check(c, _keys(None), stream, group, to, target))
    if dry_run:
        entry.count = lookup.consumer_pending(c, stream, group, source)
        entry.done_ids = actions.pending_ids(c, stream, group, source, count=DIRECT_MAX)
        return _dry_run(entry)
    ids = actions.pending_ids(c, stream, group, source, count=DIRECT_MAX + 1)
    if len(ids) > DIRECT_MAX:
        params = {"from_consumer": source, "consumer": to}
        total = lookup.consumer_pending(c, stream, group, source)
        return _queue(entry, params, total)
    return _apply(entry, lambda: actions.claim(c, stream, group, ids, to))


def remove_consumer(
    actor: Actor, stream: str, group: str, consumer: str, *, client: redis.Redis | None = None
) -> ActionOutcome:
    """Delete a consumer from the group; refused while it has pending entries."""
    stream, group = inputs.stream(stream), inputs.name("group", group)
    consumer = inputs.name("consumer", consumer)
    entry = Entry(actor, Action.REMOVE_CONSUMER, stream, group, {"consumer": consumer})
    c = _client(client)
    return _apply(entry, lambda: actions.remove_consumer(c, stream, group, consumer))


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
    c = _client(client)
    return _on_ids(
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
    c, k = _client(client), _keys(keys)

    def act() -> ActionResult:
        # On the event's timeline like the engine's own (imported here: timeline needs models).
        from workers.timeline import insert_dead_lettered_by_hand

        result = actions.dead_letter(c, stream, group, ids, reason, actor.name, keys=k)
        insert_dead_lettered_by_hand(c, stream, result.done, f"by {actor.name}: {reason}")
        return result

    would = lambda: lookup.still_pending(c, stream, group, ids)  # noqa: E731
    return _on_ids(entry, ids, dry_run, would=would, act=act, job_params={})


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
    c, k = _client(client), _keys(keys)
    ran = (lambda raws: [already_done(c, k, [raw]) > 0 for raw in raws]) if skip_done else None
    return _on_dead(
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
    c = _client(client)
    return _on_dead(
        Entry(actor, Action.PURGE, stream, reason=reason),
        c,
        _keys(keys),
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
    c, k = _client(client), _keys(keys)
    return _run(entry, lambda: rerun.force(entry, c, k, event_hash))


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
    c, k = _client(client), _keys(keys)
    if dry_run:
        already = actions.paused(c, k, stream, group)
        entry.count = int(already is None)
        entry.detail = f"already paused by {already}" if already else "would pause"
        return _dry_run(entry)

    def step() -> None:
        already = actions.paused(c, k, stream, group)
        if already is not None:
            entry.detail = f"already paused by {already}"
            return
        actions.pause(c, k, stream, group, actor.name)
        entry.count, entry.detail = 1, "paused"

    return _run(entry, step)


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
    c, k = _client(client), _keys(keys)
    if dry_run:
        was_paused = actions.paused(c, k, stream, group) is not None
        entry.count = int(was_paused)
        entry.detail = "would resume" if was_paused else "was not paused"
        return _dry_run(entry)

    def step() -> None:
        was_paused = actions.resume(c, k, stream, group)
        entry.count = int(was_paused)
        entry.detail = "resumed" if was_paused else "was not paused"

    return _run(entry, step)


# -- shared shapes -------------------------------------------------------------------------


def _on_ids(
    entry: Entry,
    ids: list[str],
    dry_run: bool,
    would: Callable[[], list[str]],
    act: Callable[[], ActionResult],
    job_params: dict[str, Any],
) -> ActionOutcome:
    """A dry run, a direct action, or (over ``DIRECT_MAX`` ids) a bulk job."""
    if dry_run:
        entry.done_ids = _read(entry, would)
        entry.count, entry.skipped = len(entry.done_ids), len(ids) - len(entry.done_ids)
        return _dry_run(entry)
    if len(ids) > DIRECT_MAX:
        return _queue(entry, {"ids": ids, **job_params})
    return _apply(entry, act)


def _on_dead(
    entry: Entry,
    client: redis.Redis,
    keys: Keys,
    ids: list[str],
    f: DeadFilter | None,
    dry_run: bool,
    act: Callable[[list[str]], ActionResult],
) -> ActionOutcome:
    """Redrive and purge: dead-letter ids (direct up to ``DIRECT_MAX``) or a filter (a job)."""
    entry.target = ids_target(ids) if f is None else jobs.filter_params(f)
    if f is not None and dry_run:
        preview = preview_redrive(entry.stream, f, client=client, keys=keys)
        entry.count = preview.matching
        entry.detail = preview.summary()
        return _dry_run(entry)
    if f is not None:  # counted (bounded, as the preview) so the job has a total to show
        bounded = _until_now(client, f)
        n = preview_redrive(entry.stream, bounded, client=client, keys=keys)
        return _queue(entry, jobs.filter_params(bounded), n.matching if n.complete else None)
    return _on_ids(
        entry,
        ids,
        dry_run,
        would=lambda: lookup.still_dead(client, entry.stream, ids),
        act=lambda: act(ids),
        job_params={},
    )


def _until_now(client: redis.Redis, f: DeadFilter) -> DeadFilter:
    """Bounded to the letters that exist now (on the server's clock, which made their ids),
    so a job never takes letters that failed again while it ran."""
    now_ms = lookup.server_time_ms(client) + 1  # until_ms is exclusive
    return replace(f, until_ms=min(f.until_ms, now_ms) if f.until_ms else now_ms)


def _dry_run(entry: Entry) -> ActionOutcome:
    note = "dry run: nothing changed"
    entry.detail = f"{note}; {entry.detail}" if entry.detail else note
    return entry.write(Result.DRY_RUN)


def _queue(entry: Entry, params: dict[str, Any], total: int | None = None) -> ActionOutcome:
    job = jobs.create(
        entry.actor, entry.action, entry.stream, entry.group, params, entry.reason, total=total
    )
    return jobs.outcome(job)


def _apply(entry: Entry, act: Callable[[], ActionResult]) -> ActionOutcome:
    def step() -> None:
        result = act()
        entry.count, entry.skipped = len(result.done), len(result.skipped)
        entry.done_ids, entry.new_ids = list(result.done), list(result.new_ids)
        entry.detail = result.detail

    return _run(entry, step)


def _read(entry: Entry, fn: Callable[[], T]) -> T:
    """``fn()``: a missing stream or group refused in words (NoSuchGroup), not Redis'; a
    refusal is recorded (``refused``) and raised."""
    return entry.guarded(lambda: group_consumers.translated(entry.stream, entry.group, fn))


def _run(entry: Entry, step: Callable[[], None]) -> ActionOutcome:
    """Do the action and write its one audit record, whatever happens: ``noop`` when it
    did nothing (every id skipped, already paused), ``refused``, ``failed``..."""
    try:
        _read(entry, step)
    except (ActionRefused, InvalidAction):
        raise
    except Exception as exc:
        entry.detail = failure_detail(entry.detail, exc)
        entry.write(Result.PARTIAL if entry.count else Result.FAILED)
        if isinstance(exc, redis.ConnectionError | redis.TimeoutError):
            raise RedisUnavailable(entry.detail) from exc
        if isinstance(exc, redis.RedisError):
            raise ActionFailed(entry.detail) from exc
        raise
    return entry.write(Result.OK if entry.count else Result.NOOP)


def _client(client: redis.Redis | None) -> redis.Redis:
    return client if client is not None else runtime.redis_client()


def _keys(keys: Keys | None) -> Keys:
    return keys if keys is not None else runtime.engine_config().keys
