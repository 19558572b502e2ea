"""Webhook sources, parsed once from the ``STREAMDESK_WEBHOOKS`` setting."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from workers.core import keys
from workers.core.errors import ConfigurationError
from workers.producers.webhooks.signatures import SCHEMES

MAPPINGS = ("github", "slack", "generic")
DEFAULT_MAX_BYTES = 1024 * 1024
DEFAULT_MAX_DEPTH = 64


@dataclass(frozen=True, slots=True)
class WebhookSource:
    """One ``POST /hooks/<name>/`` endpoint."""

    name: str
    scheme: str
    secrets: tuple[str, ...]
    mapping: str
    # generic mapping: the event type, and the header holding the sender's delivery id.
    event_type: str = ""
    id_header: str = ""
    # the signature header, when a scheme's default is not what the sender uses.
    signature_header: str = ""
    stream: str = keys.DEFAULT_STREAM
    # Answer 2xx only once a replica holds the event (WAIT 1); else 503 and the sender retries.
    durable: bool = False


def _text(name: str, raw: Mapping[str, Any], field: str, default: str = "") -> str:
    value = raw.get(field, default)
    if not isinstance(value, str):
        raise ConfigurationError(f"STREAMDESK_WEBHOOKS[{name!r}].{field} must be a string")
    return value


def _flag(name: str, raw: Mapping[str, Any], field: str) -> bool:
    value = raw.get(field, False)
    if not isinstance(value, bool):
        raise ConfigurationError(f"STREAMDESK_WEBHOOKS[{name!r}].{field} must be true or false")
    return value


def _secrets(name: str, raw: Mapping[str, Any]) -> tuple[str, ...]:
    value = raw.get("secrets", raw.get("secret"))
    values = [value] if isinstance(value, str) else value
    if (
        not isinstance(values, list | tuple)
        or not 1 <= len(values) <= 2
        or not all(isinstance(s, str) and s for s in values)
    ):
        raise ConfigurationError(
            f"STREAMDESK_WEBHOOKS[{name!r}].secrets must be one or two non-empty strings"
        )
    return tuple(values)


def parse_source(name: str, raw: Any) -> WebhookSource:
    if not isinstance(raw, Mapping):
        raise ConfigurationError(f"STREAMDESK_WEBHOOKS[{name!r}] must be a mapping")
    scheme = _text(name, raw, "scheme")
    if scheme not in SCHEMES:
        raise ConfigurationError(
            f"STREAMDESK_WEBHOOKS[{name!r}].scheme must be one of {', '.join(SCHEMES)}"
        )
    mapping = _text(name, raw, "mapping", "generic")
    if mapping not in MAPPINGS:
        raise ConfigurationError(
            f"STREAMDESK_WEBHOOKS[{name!r}].mapping must be one of {', '.join(MAPPINGS)}"
        )
    event_type = _text(name, raw, "event_type", f"webhook.{name}")
    return WebhookSource(
        name=name,
        scheme=scheme,
        secrets=_secrets(name, raw),
        mapping=mapping,
        event_type=event_type,
        id_header=_text(name, raw, "id_header"),
        signature_header=_text(name, raw, "signature_header"),
        stream=_text(name, raw, "stream", keys.DEFAULT_STREAM),
        durable=_flag(name, raw, "durable"),
    )


def parse_sources(raw: Any) -> dict[str, WebhookSource]:
    """``{name: {scheme, secrets, mapping, ...}}`` -> sources, or a ConfigurationError."""
    if not isinstance(raw, Mapping):
        raise ConfigurationError("STREAMDESK_WEBHOOKS must be a mapping of source names")
    return {str(name): parse_source(str(name), value) for name, value in raw.items()}


def load_sources_file(path: str) -> dict[str, Any]:
    """The ``STREAMDESK_WEBHOOKS_FILE``: a JSON or TOML (``.toml``) mapping of sources."""
    import json
    import tomllib

    try:
        with open(path, "rb") as file:
            raw = tomllib.load(file) if path.endswith(".toml") else json.load(file)
    except (OSError, ValueError) as exc:
        raise ConfigurationError(f"STREAMDESK_WEBHOOKS_FILE {path!r}: {exc}") from exc
    if not isinstance(raw, dict):
        raise ConfigurationError(f"STREAMDESK_WEBHOOKS_FILE {path!r} must hold a mapping")
    return raw
