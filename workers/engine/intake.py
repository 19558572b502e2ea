"""Sorting a batch of deliveries into runnable events, rejects and deleted entries. Pure."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from workers.core.errors import EventError
from workers.core.events import Event, decode_envelope, event_hash
from workers.core.records import Run
from workers.core.registry import AgentSpec, Registry
from workers.redis.bus import Delivery


@dataclass(frozen=True, slots=True)
class Runnable:
    delivery: Delivery
    event: Event[Any]
    spec: AgentSpec


@dataclass(frozen=True, slots=True)
class Rejected:
    delivery: Delivery
    reason: str
    error: str
    # Set when the event parsed: its AgentRun row is closed as dead-lettered.
    run: Run | None = None

    def log_fields(self, consumer: str) -> dict[str, Any]:
        """As ``Attempt.log_fields``, with what is known of an event that may not parse."""
        fields: dict[str, Any] = {
            "entry_id": self.delivery.entry_id,
            "consumer": consumer,
            "reason": self.reason,
        }
        if self.run is not None:
            fields |= {"event_hash": self.run.event_hash, "event_type": self.run.event_type}
        return fields


@dataclass(slots=True)
class Intake:
    runnable: list[Runnable] = field(default_factory=list)
    rejected: list[Rejected] = field(default_factory=list)
    deleted: list[Delivery] = field(default_factory=list)


def to_runnable(delivery: Delivery, stream: str, registry: Registry, max_bytes: int) -> Runnable:
    envelope = decode_envelope(delivery.raw_event, max_bytes)
    # Known before the type and data are checked, so even a rejected event has a timeline.
    delivery.event_hash = event_hash(envelope)
    spec = registry.get(envelope.type)
    data = registry.validate(envelope.type, envelope.data)
    event = Event(
        envelope=envelope,
        data=data,
        hash=delivery.event_hash,
        stream=stream,
        entry_id=delivery.entry_id,
        deliveries=delivery.deliveries,
    )
    return Runnable(delivery, event, spec)


def sort_deliveries(
    deliveries: list[Delivery], stream: str, registry: Registry, max_bytes: int
) -> Intake:
    intake = Intake()
    for delivery in deliveries:
        if delivery.deleted:
            intake.deleted.append(delivery)
            continue
        try:
            intake.runnable.append(to_runnable(delivery, stream, registry, max_bytes))
        except EventError as exc:
            intake.rejected.append(Rejected(delivery, exc.reason, str(exc)))
    return intake
