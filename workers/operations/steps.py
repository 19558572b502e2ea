"""How every operator action runs, whatever it does: a dry run, a direct action or (over
``DIRECT_MAX`` ids, or a dead-letter filter) a bulk job, and always its one audit record
(``workers/operations/__init__.py`` says which outcome when)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any, NoReturn, TypeVar

import redis

from workers.core.errors import ActionFailed, ActionRefused, InvalidAction, RedisUnavailable
from workers.core.keys import DEFAULT_GROUP, Keys
from workers.operations import jobs, lookup
from workers.operations.actions import ActionResult, DeadFilter
from workers.operations.preview import preview_redrive
from workers.redis import consumers
from workers.store.audit import ActionOutcome, Entry, Result, failure_detail, ids_target

T = TypeVar("T")
# Above this many entries an action runs as a bulk job, in batches at a bounded rate.
DIRECT_MAX = 1000


def on_ids(
    entry: Entry,
    ids: list[str],
    dry_run: bool,
    would: Callable[[], list[str]],
    act: Callable[[], ActionResult],
    job_params: dict[str, Any],
) -> ActionOutcome:
    """A dry run, a direct action, or (over ``DIRECT_MAX`` ids) a bulk job."""
    if dry_run:
        entry.done_ids = read(entry, would)
        entry.count, entry.skipped = len(entry.done_ids), len(ids) - len(entry.done_ids)
        return as_dry_run(entry)
    if len(ids) > DIRECT_MAX:
        return queue(entry, {"ids": ids, **job_params})
    return apply(entry, act)


def on_dead(
    entry: Entry,
    client: redis.Redis,
    keys: Keys,
    ids: list[str],
    f: DeadFilter | None,
    dry_run: bool,
    act: Callable[[list[str]], ActionResult],
    home: str = DEFAULT_GROUP,
) -> ActionOutcome:
    """Redrive and purge: dead-letter ids (direct up to ``DIRECT_MAX``) or a filter (a job).
    ``home``: the home group (a filter's preview counts each letter's agent's runs)."""
    entry.target = ids_target(ids) if f is None else jobs.filter_params(f)
    if f is not None:
        try:
            return on_filter(entry, client, keys, f, dry_run, home)
        except redis.RedisError as exc:  # a dead-letter key of another type: recorded too
            failed(entry, exc)
    return on_ids(
        entry,
        ids,
        dry_run,
        would=lambda: lookup.still_dead(client, entry.stream, ids),
        act=lambda: act(ids),
        job_params={},
    )


def on_filter(
    entry: Entry,
    client: redis.Redis,
    keys: Keys,
    f: DeadFilter,
    dry_run: bool,
    home: str = DEFAULT_GROUP,
) -> ActionOutcome:
    """A filter's dry run (its preview), or its bulk job."""
    if dry_run:
        preview = preview_redrive(entry.stream, f, client=client, keys=keys, home=home)
        entry.count = preview.matching
        entry.detail = preview.summary()
        return as_dry_run(entry)
    # Counted (bounded, as the preview) so the job has a total to show.
    bounded = until_now(client, f)
    n = preview_redrive(entry.stream, bounded, client=client, keys=keys)
    return queue(entry, jobs.filter_params(bounded), n.matching if n.complete else None)


def until_now(client: redis.Redis, f: DeadFilter) -> DeadFilter:
    """Bounded to the letters that exist now (on the server's clock, which made their ids),
    so a job never takes letters that failed again while it ran."""
    now_ms = lookup.server_time_ms(client) + 1  # until_ms is exclusive
    return replace(f, until_ms=min(f.until_ms, now_ms) if f.until_ms else now_ms)


def as_dry_run(entry: Entry) -> ActionOutcome:
    note = "dry run: nothing changed"
    entry.detail = f"{note}; {entry.detail}" if entry.detail else note
    return entry.write(Result.DRY_RUN)


def queue(entry: Entry, params: dict[str, Any], total: int | None = None) -> ActionOutcome:
    job = jobs.create(
        entry.actor, entry.action, entry.stream, entry.group, params, entry.reason, total=total
    )
    return jobs.outcome(job)


def apply(entry: Entry, act: Callable[[], ActionResult]) -> ActionOutcome:
    def step() -> None:
        result = act()
        entry.count, entry.skipped = len(result.done), len(result.skipped)
        entry.done_ids, entry.new_ids = list(result.done), list(result.new_ids)
        entry.detail = result.detail

    return run(entry, step)


def read(entry: Entry, fn: Callable[[], T]) -> T:
    """``fn()``: a missing stream or group refused in words (NoSuchGroup), not Redis'; a
    refusal is recorded (``refused``) and raised."""
    return entry.guarded(lambda: consumers.translated(entry.stream, entry.group, fn))


def run(entry: Entry, step: Callable[[], None]) -> ActionOutcome:
    """Do the action and write its one audit record, whatever happens: ``noop`` when it
    did nothing (every id skipped, already paused), ``refused``, ``failed``..."""
    try:
        read(entry, step)
    except (ActionRefused, InvalidAction):
        raise
    except Exception as exc:
        failed(entry, exc)
    return entry.write(Result.OK if entry.count else Result.NOOP)


def failed(entry: Entry, exc: Exception) -> NoReturn:
    """Record the failure (``partial`` when some was done), then raise it, a Redis error
    as ``RedisUnavailable`` or ``ActionFailed`` with its cause."""
    entry.detail = failure_detail(entry.detail, exc)
    entry.write(Result.PARTIAL if entry.count else Result.FAILED)
    if isinstance(exc, redis.ConnectionError | redis.TimeoutError):
        raise RedisUnavailable(entry.detail) from exc
    if isinstance(exc, redis.RedisError):
        raise ActionFailed(entry.detail) from exc
    raise exc
