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

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from workers.core.errors import EventDecodeError, EventError, EventTooLarge, InvalidEnvelope

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

    @model_validator(mode="after")
    def _no_nul(self) -> Envelope:
        # PostgreSQL's text columns cannot hold U+0000: refused here, with a clear error,
        # rather than by the database after the agent ran.
        for name in _TEXT_ATTRIBUTES:
            value = getattr(self, name)
            if value is not None and "\x00" in value:
                raise ValueError(f"{name} must not contain the NUL character (U+0000)")
        return self


_TEXT_ATTRIBUTES = ("type", "source", "id", "subject", "idempotencykey")


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
    if not err["loc"] and err["type"] == "value_error":
        return str(err["ctx"]["error"])  # a whole-envelope check names its own field
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
        envelope = Envelope.model_validate_json(raw)
    except ValidationError as exc:
        err = exc.errors()[0]
        if err["type"] == "json_invalid":
            raise EventDecodeError(f"the 'event' field is not JSON: {err['msg']}") from exc
        if err["type"] == "model_type" and not err["loc"]:
            kind = type(json.loads(raw)).__name__
            raise EventDecodeError(f"the 'event' field is JSON {kind}, not an object") from exc
        raise InvalidEnvelope(first_error(exc)) from exc
    _refuse_non_json_numbers(raw)
    return envelope


def _refuse_non_json_numbers(raw: bytes | str) -> None:
    """The parser takes NaN and Infinity, which JSON does not have (no database stores them
    as JSON). Rare: looked for only when the text holds one of the words at all."""
    if isinstance(raw, bytes):
        suspect = b"NaN" in raw or b"Infinity" in raw
    else:
        suspect = "NaN" in raw or "Infinity" in raw
    if not suspect:
        return
    try:
        strict_loads(raw)
    except ValueError as exc:
        raise EventDecodeError(f"the 'event' field is not JSON: {exc}") from exc


def strict_loads(text: bytes | str) -> Any:
    """``json.loads`` without the NaN and Infinity that JSON does not have."""
    return json.loads(text, parse_constant=_refuse_constant)


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


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


# An event already in a stream or a dead letter passed the size limit when it was published;
# hashing it again (to find its gate record or run) must not refuse it under a new limit.
NO_SIZE_LIMIT = 1 << 62


def stored_hash(raw: bytes | str | None) -> str:
    """The idempotency key of a stored event, "" if it does not decode (it never had one)."""
    try:
        return event_hash(decode_envelope(raw, NO_SIZE_LIMIT))
    except EventError:
        return ""
