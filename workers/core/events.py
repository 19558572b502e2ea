"""The event envelope (CloudEvents attribute names), its hash, and decoding.

Pure code: no Redis, no Django. Everything that turns bytes into a typed event,
or an event into bytes, lives here so producers and workers cannot disagree.
"""

from __future__ import annotations

import hashlib
import json
import math
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
        # rather than by the database after the agent ran. Every attribute but ``data`` and
        # ``context`` (the agent's own input): the named ones and any extension, its name too.
        for name in _TEXT_ATTRIBUTES:
            value = getattr(self, name)
            if value is not None and "\x00" in value:
                raise ValueError(f"{name} must not contain the NUL character (U+0000)")
        for name, value in (self.model_extra or {}).items():
            if "\x00" in name or _holds_nul(value):
                shown = name.replace("\x00", "\\x00")
                raise ValueError(f"{shown} must not contain the NUL character (U+0000)")
        return self


_TEXT_ATTRIBUTES = ("type", "source", "id", "subject", "idempotencykey", "specversion")


def _holds_nul(value: Any) -> bool:
    """Whether an extension attribute's value holds U+0000 in any string, at any depth
    (CloudEvents extensions are scalars, but nothing stops a producer nesting one)."""
    if isinstance(value, str):
        return "\x00" in value
    if isinstance(value, dict):
        return any("\x00" in k or _holds_nul(v) for k, v in value.items())
    if isinstance(value, list):
        return any(_holds_nul(v) for v in value)
    return False


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
    if isinstance(raw, str):
        raw = _utf8(raw)
    size = len(raw)
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


def _utf8(raw: str) -> bytes:
    """An entry read with ``surrogateescape`` (the engine's client) keeps each byte that is
    not UTF-8 as a lone surrogate: refused here, not replaced by U+FFFD, which would make two
    different byte strings one event with one hash."""
    try:
        return raw.encode()
    except UnicodeEncodeError as exc:
        raise EventDecodeError(
            f"the 'event' field is not UTF-8 (an invalid byte at character {exc.start})"
        ) from exc


# A number literal the parser may read as infinity has an exponent of three digits or more,
# or 200 digits before it (a two-digit exponent needs 210 to pass 1.8e308). Looked for with
# every digit as 0 and E as e: a few substring searches, in C. Hex text ("3e401f") matches
# too and only costs the exact check (a regular expression cost 4x the parse).
_ZEROED = bytes.maketrans(b"123456789E", b"000000000e")
_LONG_DIGITS = b"0" * 200


def _may_overflow(raw: bytes) -> bool:
    zeroed = raw.translate(_ZEROED, b"+")  # "1E+400" reads "0e000"
    return b"e000" in zeroed or _LONG_DIGITS in zeroed


def _refuse_non_json_numbers(raw: bytes) -> None:
    """The parser takes NaN and Infinity, which JSON does not have (no database stores them
    as JSON), and reads a number too large for a float (``1e400``) as infinity. Rare: looked
    for only when the text holds one of the words, or such a literal, at all."""
    if b"NaN" not in raw and b"Infinity" not in raw and not _may_overflow(raw):
        return
    try:
        strict_loads(raw)
    except ValueError as exc:
        raise EventDecodeError(f"the 'event' field is not JSON: {exc}") from exc


def strict_loads(text: bytes | str) -> Any:
    """``json.loads`` without the NaN and Infinity that JSON does not have, whether spelled
    out or reached by a literal too large for a float."""
    return json.loads(text, parse_constant=_refuse_constant, parse_float=_finite_float)


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


def _finite_float(literal: str) -> float:
    value = float(literal)
    if not math.isfinite(value):
        shown = literal if len(literal) <= 40 else f"{literal[:37]}..."
        raise ValueError(f"{shown} is out of a float's range (it would read as infinity)")
    return value


def non_finite_at(value: Any, where: str) -> str | None:
    """The path of the first NaN or infinite float in ``value`` (a producer's Python data,
    which pydantic would write as ``null``), else None. A loop, not recursion: any depth."""
    stack: list[tuple[str, Any]] = [(where, value)]
    while stack:
        path, item = stack.pop()
        if isinstance(item, float) and not math.isfinite(item):
            return path
        if isinstance(item, dict):
            stack.extend((f"{path}.{k}", v) for k, v in item.items())
        elif isinstance(item, list | tuple):
            stack.extend((f"{path}.{i}", v) for i, v in enumerate(item))
    return None


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
