"""The event envelope (CloudEvents attribute names), its hash, and decoding.

Pure code: no Redis, no Django. Everything that turns bytes into a typed event,
or an event into bytes, lives here so producers and workers cannot disagree.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Generic, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from workers.errors import EventDecodeError, EventTooLarge, InvalidEnvelope

SPEC_VERSION = "1.0"
DEFAULT_SOURCE = "unknown"
DEFAULT_MAX_EVENT_BYTES = 1024 * 1024

DataT = TypeVar("DataT", bound=BaseModel)


class Envelope(BaseModel):
    """The JSON object stored in a stream entry's ``event`` field."""

    # CloudEvents allows extension attributes: keep them rather than drop them.
    model_config = ConfigDict(extra="allow", frozen=True)

    type: str = Field(min_length=1, max_length=256)
    source: str = Field(default=DEFAULT_SOURCE, min_length=1, max_length=256)
    id: str | None = Field(default=None, max_length=256)
    subject: str | None = Field(default=None, max_length=256)
    time: datetime | None = None
    data: dict[str, Any]
    context: dict[str, Any] | None = None
    idempotencykey: str | None = Field(default=None, max_length=512)
    specversion: str = SPEC_VERSION

    def to_json(self) -> str:
        return self.model_dump_json(exclude_none=True)


# One encoder for every call: json.dumps() with options builds a new one each time.
_CANONICAL = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def canonical_json(value: Any) -> bytes:
    """Sorted keys, no spaces, UTF-8: the same bytes on every machine."""
    return _CANONICAL.encode(value).encode()


def event_hash(envelope: Envelope) -> str:
    """The idempotency key of an event, as DESIGN.md fixes it."""
    if envelope.idempotencykey is not None:
        parts: list[Any] = [envelope.source, envelope.type, envelope.idempotencykey]
    elif envelope.id is not None:
        parts = [envelope.source, envelope.type, envelope.id]
    else:
        parts = [envelope.source, envelope.type, envelope.subject, envelope.data]
    return hashlib.sha256(canonical_json(parts)).hexdigest()


def first_error(exc: ValidationError) -> str:
    """``field.path: message`` for the first problem pydantic found."""
    err = exc.errors()[0]
    where = ".".join(str(p) for p in err["loc"]) or "(root)"
    return f"{where}: {err['msg']}"


def decode_envelope(raw: bytes | str | None, max_bytes: int = DEFAULT_MAX_EVENT_BYTES) -> Envelope:
    """Parse an entry's ``event`` field, raising an ``EventError`` that says what is wrong."""
    if raw is None:
        raise EventDecodeError("the entry has no 'event' field")
    size = len(raw.encode() if isinstance(raw, str) else raw)
    if size > max_bytes:
        raise EventTooLarge(f"event is {size} bytes, over the limit of {max_bytes}")
    try:
        # One pass in pydantic's Rust parser: JSON and envelope checked together.
        return Envelope.model_validate_json(raw)
    except ValidationError as exc:
        err = exc.errors()[0]
        if err["type"] == "json_invalid":
            raise EventDecodeError(f"the 'event' field is not JSON: {err['msg']}") from exc
        if err["type"] == "model_type" and not err["loc"]:
            kind = type(json.loads(raw)).__name__
            raise EventDecodeError(f"the 'event' field is JSON {kind}, not an object") from exc
        raise InvalidEnvelope(first_error(exc)) from exc


def now_utc() -> datetime:
    return datetime.now(UTC)


@dataclass(frozen=True, slots=True)
class Event(Generic[DataT]):
    """What an agent receives: the envelope with ``data`` parsed by the type's schema."""

    envelope: Envelope
    data: DataT
    hash: str
    stream: str
    entry_id: str
    deliveries: int

    @property
    def type(self) -> str:
        return self.envelope.type

    @property
    def source(self) -> str:
        return self.envelope.source

    @property
    def id(self) -> str | None:
        return self.envelope.id

    @property
    def subject(self) -> str | None:
        return self.envelope.subject

    @property
    def context(self) -> dict[str, Any]:
        return self.envelope.context or {}
