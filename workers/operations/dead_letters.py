"""Actions on dead letters: put them back on their stream (redrive) or delete them (purge),
by id or by a filter (a bulk job)."""

from __future__ import annotations

import redis

from workers.core.keys import DEFAULT_GROUP, Keys
from workers.operations import actions, inputs, steps
from workers.operations.actions import DeadFilter
from workers.operations.preview import already_done, letter_run
from workers.store.audit import Action, ActionOutcome, Actor, Entry


def redrive(
    actor: Actor,
    stream: str,
    ids: list[str] | None = None,
    filter: DeadFilter | None = None,
    dry_run: bool = False,
    *,
    reason: str = "",
    skip_done: bool = False,
    client: redis.Redis,
    keys: Keys,
    home: str = DEFAULT_GROUP,
) -> ActionOutcome:
    """Put dead letters (ids, or every one a filter matches) back on the stream, each for
    its group's agent alone. ``skip_done``: letters whose run already ran (gate or
    database; the run of the letter's group's agent, ``home`` naming the home group) are
    skipped, not sent."""
    stream, reason = inputs.stream(stream), inputs.reason(reason, required=False)
    c, k = client, keys
    ran = (
        (
            lambda letters: [
                already_done(c, k, [letter_run(fields, home)], stream) > 0 for fields in letters
            ]
        )
        if skip_done
        else None
    )
    return steps.on_dead(
        Entry(actor, Action.REDRIVE, stream, reason=reason),
        c,
        k,
        *inputs.ids_or_filter(ids, filter),
        dry_run,
        act=lambda ids: actions.redrive(c, stream, ids, actor.name, ran=ran),
        home=home,
    )


def purge(
    actor: Actor,
    stream: str,
    ids: list[str] | None = None,
    filter: DeadFilter | None = None,
    *,
    reason: str,
    dry_run: bool = False,
    client: redis.Redis,
    keys: Keys,
    home: str = DEFAULT_GROUP,
) -> ActionOutcome:
    """Delete dead letters for good (ids, or every one a filter matches; a reason is required)."""
    stream, reason = inputs.stream(stream), inputs.reason(reason, required=True)
    c = client
    return steps.on_dead(
        Entry(actor, Action.PURGE, stream, reason=reason),
        c,
        keys,
        *inputs.ids_or_filter(ids, filter),
        dry_run,
        act=lambda ids: actions.purge(c, stream, ids),
        home=home,
    )
