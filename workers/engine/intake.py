"""Sorting a batch of deliveries into runnable events, rejects and deleted entries. Pure."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from workers.core.errors import EventError, UnknownEventType
from workers.core.events import Envelope, Event, decode_envelope, event_hash
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
    # Events of a type no agent takes: dead-lettered, unless they answer a waiting run
    # (workers/waits/), then acked.
    unclaimed: list[tuple[Rejected, Envelope]] = field(default_factory=list)

    def arrivals(self) -> list[tuple[Envelope, str, str]]:
        """Every event read that parsed, as ``(envelope, entry id, JSON)``: any may answer
        a waiting run."""
        out = [
            (r.event.envelope, r.delivery.entry_id, r.delivery.raw_event or "")
            for r in self.runnable
        ]
        out += [(e, r.delivery.entry_id, r.delivery.raw_event or "") for r, e in self.unclaimed]
        return out


def to_runnable(delivery: Delivery, stream: str, registry: Registry, max_bytes: int) -> Runnable:
    envelope = decode_envelope(delivery.raw_event, max_bytes)
    # Known before the type and data are checked, so even a rejected event has a timeline.
    delivery.event_hash = event_hash(envelope)
    return runnable_of(delivery, envelope, stream, registry)


def runnable_of(
    delivery: Delivery, envelope: Envelope, stream: str, registry: Registry
) -> Runnable:
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
            envelope = decode_envelope(delivery.raw_event, max_bytes)
            delivery.event_hash = event_hash(envelope)
            intake.runnable.append(runnable_of(delivery, envelope, stream, registry))
        except UnknownEventType as exc:
            intake.unclaimed.append((Rejected(delivery, exc.reason, str(exc)), envelope))
        except EventError as exc:
            intake.rejected.append(Rejected(delivery, exc.reason, str(exc)))
    return intake
