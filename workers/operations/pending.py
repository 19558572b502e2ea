"""Actions on pending entries: claim them (or all of one consumer's), remove a consumer,
retry entries now, dead-letter them by hand."""

from __future__ import annotations

import redis

from workers.core.errors import InvalidAction
from workers.core.keys import DEFAULT_GROUP, Keys
from workers.operations import actions, inputs, lookup, steps
from workers.operations.actions import ActionResult
from workers.operations.steps import DIRECT_MAX
from workers.redis import consumers
from workers.redis.consumers import Target
from workers.store.audit import Action, ActionOutcome, Actor, Entry, ids_target

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
    client: redis.Redis,
    keys: Keys,
) -> ActionOutcome:
    """Move pending entries to ``consumer`` (delivery counts unchanged); ``target`` says
    which consumers may take them (``consumers.Target``; refused: InvalidAction)."""
    stream, group = inputs.stream(stream), inputs.name("group", group)
    ids, consumer = inputs.entry_ids(ids), inputs.name("consumer", consumer)
    entry = Entry(actor, Action.CLAIM, stream, group, ids_target(ids))
    c = client
    steps.read(
        entry,
        lambda: consumers.check(c, keys, stream, group, consumer, target),
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
    client: redis.Redis,
    keys: Keys,
) -> ActionOutcome:
    """Every pending entry of ``from_consumer`` (an orphaned one) to ``to_consumer``."""
    stream, group = inputs.stream(stream), inputs.name("group", group)
    source, to = inputs.name("from_consumer", from_consumer), inputs.name("consumer", to_consumer)
    if source == to:
        raise InvalidAction("consumer", "claiming to the same consumer changes nothing")
    entry = Entry(actor, Action.CLAIM_ALL, stream, group, {"consumer": source, "to": to})
    c = client
    steps.read(
        entry,
        lambda: consumers.check(c, keys, stream, group, to, target),
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
    actor: Actor, stream: str, group: str, consumer: str, *, client: redis.Redis, keys: Keys
) -> ActionOutcome:
    """Delete a consumer from the group; refused while it has pending entries."""
    stream, group = inputs.stream(stream), inputs.name("group", group)
    consumer = inputs.name("consumer", consumer)
    entry = Entry(actor, Action.REMOVE_CONSUMER, stream, group, {"consumer": consumer})
    c = client
    return steps.apply(entry, lambda: actions.remove_consumer(c, stream, group, consumer))


def retry_now(
    actor: Actor,
    stream: str,
    group: str,
    ids: list[str],
    dry_run: bool = False,
    *,
    client: redis.Redis,
    keys: Keys,
    claim_idle_ms: int,
    home: str = DEFAULT_GROUP,
) -> ActionOutcome:
    """Let the next reclaim by any live worker take these pending entries now.
    ``claim_idle_ms``: the workers' setting (``EngineConfig.claim_idle_ms``); ``home``: the
    home group's name (``EngineConfig.group``), which says whose runs ``group``'s are."""
    stream, group, ids = inputs.stream(stream), inputs.name("group", group), inputs.entry_ids(ids)
    idle_ms = claim_idle_ms + RETRY_MARGIN_MS
    entry = Entry(actor, Action.RETRY, stream, group, ids_target(ids))
    c, k = client, keys
    return steps.on_ids(
        entry,
        ids,
        dry_run,
        would=lambda: lookup.still_pending(c, stream, group, ids),
        act=lambda: actions.retry_now(c, stream, group, ids, idle_ms, keys=k, home=home),
        job_params={"idle_ms": idle_ms, "home": home},
    )


def dead_letter(
    actor: Actor,
    stream: str,
    group: str,
    ids: list[str],
    reason: str,
    dry_run: bool = False,
    *,
    client: redis.Redis,
    keys: Keys,
    home: str = DEFAULT_GROUP,
) -> ActionOutcome:
    """Move pending entries to the dead letters (a reason is required). ``home``: the home
    group's name: the gate records held and the rows closed are ``group``'s agent's."""
    stream, group, ids = inputs.stream(stream), inputs.name("group", group), inputs.entry_ids(ids)
    reason = inputs.reason(reason, required=True)
    entry = Entry(actor, Action.DEAD_LETTER, stream, group, ids_target(ids), reason)
    c, k = client, keys

    def act() -> ActionResult:
        # On the event's timeline like the engine's own, its run closed as dead (the fence
        # against a frozen attempt): imported here, as timeline needs models.
        from workers.store.runs import close_dead_lettered_by_hand

        result = actions.dead_letter(c, stream, group, ids, reason, actor.name, keys=k, home=home)
        detail, agent = f"by {actor.name}: {reason}", actions.agent_in(home, group)
        close_dead_lettered_by_hand(c, stream, result.done, detail, by=actor.name, agent=agent)
        return result

    would = lambda: lookup.still_pending(c, stream, group, ids)  # noqa: E731
    params = {"home": home}
    return steps.on_ids(entry, ids, dry_run, would=would, act=act, job_params=params)
