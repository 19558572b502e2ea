"""Publishing events from Python: validate, fill the envelope, XADD."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any

import redis
from pydantic import BaseModel, ValidationError

from workers.core import keys, tracing
from workers.core.errors import InvalidEnvelope, RedisUnavailable
from workers.core.events import Envelope, event_hash, first_error, non_finite_at, now_utc
from workers.core.partitions import Partitions
from workers.core.registry import Registry, default_registry
from workers.redis import bus
from workers.redis.connection import UNREACHABLE
from workers.redis.replication import Durability
from workers.timers import Due, Schedule, due_time
from workers.timers import add as hold_delayed

APP_SOURCE = "app"


def build_envelope(
    event_type: str,
    data: dict[str, Any] | BaseModel,
    *,
    registry: Registry = default_registry,
    source: str = APP_SOURCE,
    id: str | None = None,
    subject: str | None = None,
    context: dict[str, Any] | None = None,
    key: str | None = None,
    time: datetime | None = None,
) -> Envelope:
    """A validated envelope; raises UnknownEventType / InvalidEventData naming the field."""
    raw = data.model_dump(mode="json") if isinstance(data, BaseModel) else data
    registry.validate(event_type, raw)
    # JSON has no NaN or Infinity: pydantic would write them as null, changing the event.
    bad = non_finite_at(raw, "data") or non_finite_at(context, "context")
    if bad is not None:
        raise InvalidEnvelope(f"{bad}: NaN and infinity are not JSON numbers")
    try:
        return Envelope(
            type=event_type,
            source=source,
            id=id or str(uuid.uuid4()),
            subject=subject,
            time=time or now_utc(),
            data=raw,
            context=context,
            idempotencykey=key,
        )
    except ValidationError as exc:
        raise InvalidEnvelope(first_error(exc)) from exc


def partition_of(layout: Partitions, envelope: Envelope, partition_key: str | None = None) -> str:
    """The partition stream an event goes to: by ``partition_key`` if given, else by its
    subject (one subject's events keep their order), else by its idempotency hash, so that
    copies of one event meet one gate record."""
    if layout.single:
        return layout.stream
    return layout.stream_for(partition_key or envelope.subject or event_hash(envelope))


def publish_envelopes(
    client: redis.Redis,
    stream: str | Partitions,
    envelopes: list[Envelope],
    durability: Durability | None = None,
    partition_key: str | None = None,
) -> list[str]:
    """XADD ``envelopes`` to ``stream``, or each to its partition of a partitioned one; with
    tracing on, each carries its own producer span's context (``traceparent``), the child of
    the caller's current span."""
    layout = stream if isinstance(stream, Partitions) else Partitions(stream)
    with tracing.sending(layout.stream, envelopes) as sending:
        entries = [(partition_of(layout, e, partition_key), e.to_json()) for e in sending.envelopes]
        try:
            entry_ids = bus.xadd_routed(client, entries, durability)
        except UNREACHABLE as exc:
            raise RedisUnavailable(f"could not publish to {layout.stream}: {exc}") from exc
        sending.sent(entry_ids)
        return entry_ids


def publish(
    event_type: str,
    data: dict[str, Any] | BaseModel,
    *,
    stream: str = keys.DEFAULT_STREAM,
    client: redis.Redis | None = None,
    registry: Registry = default_registry,
    durable: bool = False,
    partition_key: str | None = None,
    delay_s: float | None = None,
    at: datetime | float | None = None,
    **envelope: Any,
) -> str:
    """Publish one event and return its stream entry id.

    ``envelope`` takes ``source``, ``id``, ``subject``, ``context``, ``key`` and ``time``.
    Nothing is written when validation fails. ``durable``: return only once a replica holds
    the entry (``WAIT 1``, up to 2 s), else raise NotReplicated: replication is asynchronous,
    and a failover can lose an entry the primary acknowledged (docs/scaling.md). With
    ``STREAMDESK_PARTITIONS`` above 1 the event goes to the partition of ``partition_key``,
    else of its subject (docs/scaling.md).

    ``delay_s`` (seconds from now, by the Redis server's clock) or ``at`` (a timezone-aware
    datetime, or epoch seconds) holds the event until then: it enters the stream within a
    second of its due time, exactly once (docs/timers.md). It has no entry id before that:
    the event's ``id`` is returned instead. Both given, a negative delay or a naive
    datetime raise InvalidDelay; a past ``at`` publishes at once.
    """
    due = due_time(delay_s, at)
    built = build_envelope(event_type, data, registry=registry, **envelope)
    tracing.configure()  # looks once per process: the application may have set a provider
    from workers.from_settings import partitions, redis_client

    if client is None:
        client = redis_client()
    durability = Durability() if durable else None
    layout = partitions(stream, client)
    if not due.now:
        hold_envelopes(client, layout, [built], due, durability, partition_key)
        return built.id or ""
    return publish_envelopes(client, layout, [built], durability, partition_key)[0]


def hold_envelopes(
    client: redis.Redis,
    stream: str | Partitions,
    envelopes: list[Envelope],
    due: Due,
    durability: Durability | None = None,
    partition_key: str | None = None,
    key_names: keys.Keys | None = None,
) -> list[int]:
    """Hold ``envelopes`` until ``due`` (``publish_envelopes``, later): each in the delayed
    set of the partition it will enter, with its producer span's context as it is now (the
    trace goes on from the publisher, not from the timer). Returns each one's due time (ms)."""
    if due.now:
        raise ValueError("hold_envelopes needs a due time: publish_envelopes publishes now")
    layout = stream if isinstance(stream, Partitions) else Partitions(stream)
    if key_names is None:
        from workers.from_settings import engine_config

        key_names = engine_config().keys
    with tracing.sending(layout.stream, envelopes) as sending:
        entries = [(partition_of(layout, e, partition_key), e.to_json()) for e in sending.envelopes]
        return hold_delayed(client, key_names, entries, due, durability)


def scheduled_entry(
    client: redis.Redis, schedule: Schedule, tick_ms: int, registry: Registry = default_registry
) -> tuple[str, str]:
    """A schedule's tick as the timer publishes it: its partition stream (the schedule
    name's, so every tick of one schedule meets one record of its last tick) and its
    envelope JSON, validated against the registry like any published event."""
    from workers.from_settings import partitions

    built = build_envelope(
        schedule.type, dict(schedule.data), registry=registry, **schedule.envelope_fields(tick_ms)
    )
    layout = partitions(schedule.stream, client)
    return partition_of(layout, built, schedule.name), built.to_json()
