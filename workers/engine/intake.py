"""Sorting a batch of deliveries into runnable events, rejects and deleted entries. Pure."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from workers.core.errors import EventError, UnknownEventType
from workers.core.events import Envelope, Event, decode_envelope, event_hash
from workers.core.fanout import REPLAY_FIELD, TARGET_FIELD
from workers.core.records import Run
from workers.core.registry import AgentSpec, Registry
from workers.redis.bus import Delivery


@dataclass(frozen=True, slots=True)
class Runnable:
    delivery: Delivery
    event: Event[Any]
    spec: AgentSpec
    # The event's own hash (``event.hash`` is the agent's run's), and the run a forced
    # replay repeats ("" for a first run).
    event_key: str = ""
    replay_of: str = ""


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
    # Another group's business (workers/core/fanout.py): acked, counted nowhere. Those of
    # a type only named agents take may still answer a wait (the home group looks).
    passed: list[Delivery] = field(default_factory=list)
    others: list[tuple[Delivery, Envelope]] = field(default_factory=list)

    def arrivals(self) -> list[tuple[Envelope, str, str]]:
        """Every event read that parsed, as ``(envelope, entry id, JSON)``: any may answer
        a waiting run."""
        out = [
            (r.event.envelope, r.delivery.entry_id, r.delivery.raw_event or "")
            for r in self.runnable
        ]
        out += [(e, r.delivery.entry_id, r.delivery.raw_event or "") for r, e in self.unclaimed]
        out += [(e, d.entry_id, d.raw_event or "") for d, e in self.others]
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
    # The agent's own run of the event (its gate namespace; a forced replay: a new run).
    key, salt = delivery.event_hash, delivery.fields.get(REPLAY_FIELD, "")
    delivery.event_hash = spec.run_hash(key, salt)
    data = registry.validate(envelope.type, envelope.data)
    event = Event(
        envelope=envelope,
        data=data,
        hash=delivery.event_hash,
        stream=stream,
        entry_id=delivery.entry_id,
        deliveries=delivery.deliveries,
    )
    return Runnable(delivery, event, spec, key, spec.run_hash(key) if salt else "")


def sort_deliveries(
    deliveries: list[Delivery],
    stream: str,
    registry: Registry,
    max_bytes: int,
    group: str = "",
    home: bool = True,
) -> Intake:
    """Sort a batch by what becomes of each entry. ``group`` reads it; the ``home`` group
    also takes what no agent takes (dead-lettered) and what does not parse. An entry meant
    for another group, or of a type only another group's agents take, is passed over."""
    intake = Intake()
    for delivery in deliveries:
        if delivery.deleted:
            intake.deleted.append(delivery)
            continue
        target = delivery.fields.get(TARGET_FIELD)
        if target is not None and target != group:
            intake.passed.append(delivery)
            continue
        try:
            envelope = decode_envelope(delivery.raw_event, max_bytes)
        except EventError as exc:
            if home:
                intake.rejected.append(Rejected(delivery, exc.reason, str(exc)))
            else:
                intake.passed.append(delivery)
            continue
        delivery.event_hash = event_hash(envelope)
        try:
            intake.runnable.append(runnable_of(delivery, envelope, stream, registry))
        except UnknownEventType as exc:
            if home and envelope.type not in registry.whole:
                intake.unclaimed.append((Rejected(delivery, exc.reason, str(exc)), envelope))
            else:
                intake.passed.append(delivery)
                if home:
                    intake.others.append((delivery, envelope))
        except EventError as exc:
            intake.rejected.append(Rejected(delivery, exc.reason, str(exc)))
    return intake
