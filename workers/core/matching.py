"""What a wait matches, pure: ``match={"subject": ..., "data.order_id": ...}`` checked, its
shape (the sorted field names) and its digest (type, fields and values), and the same digest
worked out from an event, so an event finds its waits in one set per shape, not by a scan.

A field is ``subject`` or ``data.<path>``, a dotted path into the event's ``data``
(``data.refund.id``). Values compare as JSON: ``42`` and ``"42"`` differ.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from typing import Any

from workers.core.errors import StepError
from workers.core.events import Envelope, canonical_json

MAX_FIELDS = 8
_MISSING = object()


def check_match(match: Mapping[str, Any] | None) -> dict[str, Any]:
    """``match`` as a plain dict, or StepError naming what is wrong with it."""
    if match is None:
        return {}
    if not isinstance(match, Mapping):
        raise StepError(f"match must be a dict of field -> value, got {type(match).__name__}")
    if len(match) > MAX_FIELDS:
        raise StepError(f"match may name at most {MAX_FIELDS} fields, got {len(match)}")
    out: dict[str, Any] = {}
    for field, value in match.items():
        if not isinstance(field, str) or not _valid_field(field):
            raise StepError(
                f"match field {field!r}: use 'subject' or 'data.<path>' (say 'data.order_id')"
            )
        try:
            canonical_json(value)
        except (TypeError, ValueError) as exc:
            raise StepError(f"match field {field!r}: its value is not JSON ({exc})") from exc
        out[field] = value
    return out


def _valid_field(field: str) -> bool:
    if field == "subject":
        return True
    head, _, path = field.partition(".")
    return head == "data" and bool(path) and all(path.split("."))


def shape_of(match: Mapping[str, Any]) -> str:
    """The sorted field names, joined by a space (``""`` for an empty match)."""
    return " ".join(sorted(match))


def digest(event_type: str, match: Mapping[str, Any]) -> str:
    fields = sorted(match.items())
    return hashlib.sha1(canonical_json([event_type, fields]), usedforsecurity=False).hexdigest()


def value_of(envelope: Envelope, field: str) -> Any:
    """``field`` of ``envelope``, or ``_MISSING``."""
    if field == "subject":
        return envelope.subject if envelope.subject is not None else _MISSING
    node: Any = envelope.data
    for part in field[len("data.") :].split("."):
        if not isinstance(node, dict) or part not in node:
            return _MISSING
        node = node[part]
    return node


def event_digests(envelope: Envelope, shapes: list[str]) -> list[str]:
    """The digests under which waits of these shapes would wait for ``envelope``: one per
    shape whose fields the event has."""
    out = []
    for shape in shapes:
        fields = shape.split(" ") if shape else []
        values = {f: value_of(envelope, f) for f in fields}
        if any(v is _MISSING for v in values.values()):
            continue
        out.append(digest(envelope.type, values))
    return out
