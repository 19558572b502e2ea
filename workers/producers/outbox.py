"""The transactional outbox: write an event in the same transaction as the change.

``emit()`` validates like ``publish()`` and inserts an ``OutboxEvent`` row; it must run
inside ``transaction.atomic()``, so the row commits with the change or not at all. The relay
(``workers/producers/relay.py``) publishes committed rows. On PostgreSQL ``emit()`` also issues
``pg_notify``, which is transactional too: the relay wakes on commit, never on a rollback.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.db import connections, router
from django.db.models import Count, Min
from pydantic import BaseModel

from workers.core import keys
from workers.core.errors import StreamdeskError
from workers.core.events import now_utc
from workers.core.registry import Registry, default_registry
from workers.models import OutboxEvent

OUTBOX_SOURCE = "outbox"
# The PostgreSQL channel emit() notifies and the relay listens on.
NOTIFY_CHANNEL = "streamdesk_outbox"


class NotInTransaction(StreamdeskError):
    """``emit()`` was called outside ``transaction.atomic()``: the row would commit alone."""


def emit(
    event_type: str,
    data: dict[str, Any] | BaseModel,
    *,
    subject: str,
    context: dict[str, Any] | None = None,
    stream: str | None = None,
    key: str | None = None,
    registry: Registry = default_registry,
) -> OutboxEvent:
    """Validate and write one outbox row in the caller's transaction.

    Raises ``NotInTransaction`` outside ``transaction.atomic()`` (autocommit would publish a
    change that may still roll back), and UnknownEventType / InvalidEventData like publish().
    """
    using = router.db_for_write(OutboxEvent)
    connection = connections[using]
    if not connection.in_atomic_block:
        raise NotInTransaction(
            f"emit({event_type!r}) must be called inside transaction.atomic(), "
            "in the same transaction as the change it describes"
        )
    raw = data.model_dump(mode="json") if isinstance(data, BaseModel) else data
    registry.validate(event_type, raw)
    row = OutboxEvent.objects.using(using).create(
        stream=stream or keys.DEFAULT_STREAM,
        type=event_type,
        source=OUTBOX_SOURCE,
        subject=subject,
        data=raw,
        context=context,
        idempotency_key=key or "",
    )
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_notify(%s, '')", [NOTIFY_CHANNEL])
    return row


@dataclass(frozen=True, slots=True)
class OutboxLag:
    """How far the relay is behind: unsent rows and the age of the oldest one."""

    unsent: int
    oldest_age_s: float | None


def outbox_lag(now: datetime | None = None) -> OutboxLag:
    """One query on the partial index of unsent rows; for the console and health checks."""
    row = OutboxEvent.objects.filter(sent_at__isnull=True).aggregate(
        unsent=Count("id"), oldest=Min("created_at")
    )
    oldest: datetime | None = row["oldest"]
    age = None if oldest is None else max(0.0, ((now or now_utc()) - oldest).total_seconds())
    return OutboxLag(unsent=int(row["unsent"]), oldest_age_s=age)
