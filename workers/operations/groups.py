"""Actions on a consumer group as a whole: pause its workers, resume them."""

from __future__ import annotations

import redis

from workers.core.keys import Keys
from workers.operations import actions, inputs, steps
from workers.store.audit import Action, ActionOutcome, Actor, Entry


def pause(
    actor: Actor,
    stream: str,
    group: str,
    dry_run: bool = False,
    *,
    client: redis.Redis,
    keys: Keys,
) -> ActionOutcome:
    """Workers of the group stop reading new entries within a second."""
    stream, group = inputs.stream(stream), inputs.name("group", group)
    entry = Entry(actor, Action.PAUSE, stream, group)
    c, k = client, keys
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
    client: redis.Redis,
    keys: Keys,
) -> ActionOutcome:
    stream, group = inputs.stream(stream), inputs.name("group", group)
    entry = Entry(actor, Action.RESUME, stream, group)
    c, k = client, keys
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
