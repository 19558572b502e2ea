"""One delivery, start to finish without I/O: verify, parse, map, build the envelope."""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping
from typing import Any

from workers.core.errors import PayloadInvalid
from workers.core.events import Envelope, strict_loads
from workers.core.registry import Registry
from workers.producers.publish import build_envelope
from workers.producers.webhooks.config import DEFAULT_MAX_DEPTH, WebhookSource
from workers.producers.webhooks.mappings import Challenge, map_payload
from workers.producers.webhooks.schemas import AnyJson, register_webhook_types
from workers.producers.webhooks.signatures import SCHEMES

_OPEN = frozenset(b"[{")
_CLOSE = frozenset(b"]}")


def json_depth(body: bytes) -> int:
    """The deepest ``[``/``{`` nesting outside strings, found before parsing: the parser
    recurses, so a deep body must be refused before it gets there."""
    depth = deepest = 0
    in_string = escaped = False
    for byte in body:
        if in_string:
            if escaped:
                escaped = False
            elif byte == 0x5C:  # backslash
                escaped = True
            elif byte == 0x22:  # quote
                in_string = False
        elif byte == 0x22:
            in_string = True
        elif byte in _OPEN:
            depth += 1
            deepest = max(deepest, depth)
        elif byte in _CLOSE:
            depth -= 1
    return deepest


def parse_json(body: bytes, max_depth: int = DEFAULT_MAX_DEPTH) -> Any:
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise PayloadInvalid(f"(root): the body is not UTF-8 (byte {exc.start})") from exc
    # Counting brackets is C-fast; the byte-by-byte scan only runs when there are enough
    # of them to nest too deep.
    brackets = body.count(b"[") + body.count(b"{")
    if brackets > max_depth and json_depth(body) > max_depth:
        raise PayloadInvalid(f"(root): JSON nests deeper than {max_depth} levels")
    try:
        return strict_loads(text)
    except (ValueError, RecursionError) as exc:
        raise PayloadInvalid(f"(root): the body is not valid JSON: {exc}") from exc


def verify(source: WebhookSource, body: bytes, headers: Mapping[str, str], now_s: float) -> None:
    """Raises SignatureInvalid; ``headers`` has lower-case names."""
    SCHEMES[source.scheme](body, headers, source.secrets, now_s, source.signature_header)


def envelope_for(
    source: WebhookSource,
    body: bytes,
    headers: Mapping[str, str],
    *,
    now_s: float,
    registry: Registry,
    max_depth: int = DEFAULT_MAX_DEPTH,
) -> Envelope | Challenge:
    """The envelope to publish (or Slack's challenge). Raises SignatureInvalid, then
    PayloadInvalid / EventError naming the field: the signature is checked first."""
    verify(source, body, headers, now_s)
    mapped = map_payload(source, parse_json(body, max_depth), headers)
    if isinstance(mapped, Challenge):
        return mapped
    # Without a sender's delivery id the body's digest is the id: a redelivery of the same
    # bytes hashes the same, and the gate runs it once.
    delivery_id = mapped.id or f"sha256:{hashlib.sha256(body).hexdigest()}"
    return build_envelope(
        mapped.type,
        mapped.data,
        registry=registry,
        source=source.name,
        id=delivery_id,
        subject=mapped.subject,
        context=mapped.context or None,
    )


def register_types(registry: Registry, sources: Iterable[WebhookSource]) -> None:
    """The built-in types and each generic source's type (any JSON object until an agent
    with its own schema is registered)."""
    register_webhook_types(registry)
    for source in sources:
        if source.mapping == "generic":
            registry.register_schema(source.event_type, AnyJson)
