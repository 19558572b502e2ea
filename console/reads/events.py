"""One event as the event page shows it: its envelope, hash, run record, timeline and the
durable steps its agent stored."""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import redis
from django.db.models import Q

from console.params import datable_id
from console.reads import browse
from workers.core.keys import EVENT_FIELD, Keys
from workers.core.steps import Kind
from workers.core.storable import encodable
from workers.core.tracing import trace_id_of
from workers.gate import live_lease
from workers.models import AgentRun, StepResult
from workers.store.durable_steps import steps_of
from workers.store.timeline_rows import Step, published_step, steps_for

# Steps that start or end an attempt: the last of them says whether one is under way.
ATTEMPT_KINDS = frozenset(
    {Kind.RAN, Kind.FAILED, Kind.FENCED, Kind.RELEASED, Kind.COMMITTED, Kind.DEFERRED}
    | {Kind.WAITING, Kind.CANCELLED, Kind.DEAD_LETTERED}
)
# Larger envelopes are cut for display; "show all" renders the whole text on request.
PREVIEW_CHARS = 20_000
# An agent looping over thousands of steps must not make its event page unreadable or slow.
MAX_STEPS = 200
# A step's stored value is cut to this in the list; the whole value folds out below it.
STEP_VALUE_CHARS = 2_000
# The runs of one event shown side by side: one per agent, plus forced replays.
MAX_RUNS = 20


@dataclass(frozen=True, slots=True)
class DurableStep:
    """One ``ctx.step`` result as stored: ran once, replayed on every redelivery."""

    name: str
    consumer: str
    token: int  # the attempt (fencing token) that ran it
    duration_ms: float | None
    at: datetime
    preview: str
    # The whole value when ``preview`` is cut, else None.
    full: str | None


@dataclass(frozen=True, slots=True)
class DurableSteps:
    steps: list[DurableStep]
    total: int  # all stored steps; more than len(steps) when the list was cut at MAX_STEPS


@dataclass(frozen=True, slots=True)
class EventView:
    stream: str
    entry_id: str
    found: bool  # False: the entry was trimmed or deleted; the database still knows the event
    pretty: str
    size: int
    truncated: bool
    event_hash: str | None
    summary: browse.Summary
    run: AgentRun | None
    steps: list[Step]
    durable: DurableSteps
    # From the envelope's ``traceparent`` (the producer's span); None without one.
    trace_id: str | None = None
    # Every run of the event: one per agent, and each forced replay (issue 31), by agent.
    runs: list[AgentRun] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class RunningNow:
    """An agent holds the event's gate lease now: where, and since when if recorded."""

    consumer: str
    # How long it has run, from its attempt's ``ran`` step on the timeline (None: its start
    # is not recorded yet: it began under a second ago, or the timeline is off).
    for_ms: int | None
    lease_left_ms: int


def running_now(client: redis.Redis, keys: Keys, view: EventView) -> RunningNow | None:
    """The event's live agent lease, if any (one round trip): the "running on <consumer>
    for 58 s" of the event page."""
    lease = live_lease(client, keys, view.event_hash, view.stream) if view.event_hash else None
    if lease is None:
        return None
    since_ms = _started_ms(view.steps, lease.consumer)
    now_ms = int(time.time() * 1000)
    for_ms = max(now_ms - since_ms, 0) if since_ms is not None else None
    return RunningNow(lease.consumer, for_ms, lease.left_ms)


def _started_ms(steps: list[Step], consumer: str) -> int | None:
    """When the running attempt began: its ``ran`` step, if that is the event's last step
    of an attempt (an earlier attempt's would be followed by how it ended)."""
    attempts = [s for s in steps if s.kind in ATTEMPT_KINDS]
    last = attempts[-1] if attempts else None
    if last is None or last.kind != Kind.RAN or last.consumer != consumer:
        return None
    return int(last.at.timestamp() * 1000)


def pretty_json(raw: str) -> str:
    """The envelope indented for reading; as stored when it is not JSON or nests deeper than
    the parser goes. Encodable either way: a ``\\ud800`` escape decodes to a lone
    surrogate, which no page can be written with, so it is shown as its escape again."""
    try:
        text = json.dumps(json.loads(raw), indent=2, sort_keys=False, ensure_ascii=False)
    except (ValueError, RecursionError):
        return encodable(raw)
    return encodable(text)


def _view(
    stream: str, entry_id: str, raw: str | None, run: AgentRun | None, full: bool
) -> EventView:
    text = pretty_json(raw) if raw is not None else ""
    truncated = not full and len(text) > PREVIEW_CHARS
    # A run's ``event_hash`` is its own (a named agent's, a replay's): the event's is its key.
    event_hash = browse.hash_of(raw) if raw is not None else (event_key_of(run) if run else None)
    runs = runs_of(event_hash)
    return EventView(
        stream=stream,
        entry_id=entry_id,
        found=raw is not None,
        pretty=text[:PREVIEW_CHARS] if truncated else text,
        size=len(raw or ""),
        truncated=truncated,
        event_hash=event_hash,
        summary=browse.summarize(raw)
        if raw is not None
        else browse.Summary(
            run.event_type if run else "", run.subject if run else "", run.source if run else "", 0
        ),
        run=run if run is not None else main_run(runs, event_hash),
        steps=timeline(event_hash, stream, entry_id, runs),
        durable=durable_steps(event_hash),
        trace_id=trace_id_of(_traceparent(raw)),
        runs=runs,
    )


def event_key_of(run: AgentRun) -> str:
    """The event's own hash: ``event_key``, or (a row from before agents had names, whose
    run hash is the event's) its ``event_hash``."""
    return run.event_key or run.event_hash


def runs_of(event_hash: str | None) -> list[AgentRun]:
    """The event's runs, side by side on its page: each agent's (their ``event_key``) and a
    home agent's older row (its run hash is the event's), at most MAX_RUNS.
    Two index lookups (``event_key``, the unique ``event_hash``)."""
    if not event_hash:
        return []
    found = AgentRun.objects.filter(Q(event_key=event_hash) | Q(event_hash=event_hash))
    # By agent (the home agent first), each agent's replays after its first run.
    ordered = found.order_by("agent", "created_at", "id")
    return list(ordered.defer("lease", "fence")[:MAX_RUNS])


def main_run(runs: list[AgentRun], event_hash: str | None) -> AgentRun | None:
    """The run the page's facts and actions are about: the home agent's (its run hash is
    the event's), else the first."""
    home = next((r for r in runs if r.event_hash == event_hash), None)
    return home or (runs[0] if runs else None)


def _traceparent(raw: str | None) -> str | None:
    try:
        value = json.loads(raw).get("traceparent") if raw else None
    except (ValueError, AttributeError, RecursionError):
        return None
    return value if isinstance(value, str) else None


def timeline(
    event_hash: str | None, stream: str, entry_id: str, runs: list[AgentRun] | None = None
) -> list[Step]:
    """The stored steps of every run of the event (each agent's steps are under its run
    hash; its consumer, ``host@agent``, tells them apart) plus a ``published`` step for
    every entry that carried the event (the original and any redrive or re-run), in time
    order."""
    hashes = dict.fromkeys([event_hash] if event_hash else [])
    hashes.update(dict.fromkeys(r.event_hash for r in runs or []))
    steps = [step for h in hashes if h for step in steps_for(h)]
    entries = {(s.stream, s.entry_id) for s in steps} | {(stream, entry_id)}
    # An id past the year 9999 has no date to place its step at: the page still shows the rest.
    published = [published_step(st, e) for st, e in sorted(entries) if datable_id(e)]
    return sorted([*published, *steps], key=lambda s: (s.at, s.kind != "published"))


def durable_steps(event_hash: str | None) -> DurableSteps:
    """The first MAX_STEPS stored steps in the order they ran, and how many there are."""
    if not event_hash:
        return DurableSteps([], 0)
    rows = steps_of(event_hash, MAX_STEPS)
    total = len(rows)
    if total == MAX_STEPS:  # only then can there be more
        total = StepResult.objects.filter(event_hash=event_hash).count()
    return DurableSteps([_durable(row) for row in rows], total)


def _durable(row: StepResult) -> DurableStep:
    text = _value_text(row.value)
    cut = len(text) > STEP_VALUE_CHARS
    return DurableStep(
        name=row.name,
        consumer=row.consumer,
        token=row.token,
        duration_ms=row.duration_ms,
        at=row.created_at,
        preview=text[:STEP_VALUE_CHARS] if cut else text,
        full=text if cut else None,
    )


def _value_text(value: Any) -> str:
    return encodable(json.dumps(value, indent=2, ensure_ascii=False, default=str))


def by_entry(client: redis.Redis, stream: str, entry_id: str, full: bool = False) -> EventView:
    fields = browse.entry(client, stream, entry_id)
    raw = fields.get(EVENT_FIELD) if fields else None
    # PostgreSQL refuses NUL in a parameter; Redis allows it in a name, no run can have it.
    unknown = raw is not None or "\x00" in stream
    run = None if unknown else AgentRun.objects.filter(stream=stream, entry_id=entry_id).first()
    return _view(stream, entry_id, raw, run, full)


def by_hash(client: redis.Redis, event_hash: str) -> EventView | None:
    """The event of a run (``event_hash``: the event's hash, or one of its runs' own), with
    its envelope if its last entry is still in the stream."""
    run = AgentRun.objects.filter(event_hash=event_hash).first()
    if run is None:  # only named agents ran it: the event's hash is their event_key
        run = AgentRun.objects.filter(event_key=event_hash).order_by("created_at", "id").first()
    if run is None:
        return None
    fields = (
        browse.entry(client, run.stream, run.entry_id) if browse.valid_id(run.entry_id) else None
    )
    raw = fields.get(EVENT_FIELD) if fields else None
    return _view(run.stream, run.entry_id, raw, run, False)
