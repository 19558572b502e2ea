"""Publishing events from Python: validate, fill the envelope, XADD."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any

import redis
from pydantic import BaseModel, ValidationError

from workers.core import keys, tracing
from workers.core.errors import InvalidEnvelope, RedisUnavailable
from workers.core.events import Envelope, first_error, now_utc
from workers.core.registry import Registry, default_registry
from workers.redis import bus
from workers.redis.replication import Durability

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


def publish_envelopes(
    client: redis.Redis,
    stream: str,
    envelopes: list[Envelope],
    durability: Durability | None = None,
) -> list[str]:
    """XADD ``envelopes``; with tracing on, each carries its own producer span's context
    (``traceparent``), the child of the caller's current span."""
    with tracing.sending(stream, envelopes) as sending:
        payloads = [e.to_json() for e in sending.envelopes]
        try:
            entry_ids = bus.xadd_many(client, stream, payloads, durability)
        except (redis.ConnectionError, redis.TimeoutError) as exc:
            raise RedisUnavailable(f"could not publish to {stream}: {exc}") from exc
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
    **envelope: Any,
) -> str:
    """Publish one event and return its stream entry id.

    ``envelope`` takes ``source``, ``id``, ``subject``, ``context``, ``key`` and ``time``.
    Nothing is written when validation fails. ``durable``: return only once a replica holds
    the entry (``WAIT 1``, up to 2 s), else raise NotReplicated: replication is asynchronous,
    and a failover can lose an entry the primary acknowledged (docs/scaling.md).
    """
    built = build_envelope(event_type, data, registry=registry, **envelope)
    tracing.configure()  # looks once per process: the application may have set a provider
    if client is None:
        from workers.from_settings import redis_client

        client = redis_client()
    return publish_envelopes(client, stream, [built], Durability() if durable else None)[0]
