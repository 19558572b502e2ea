"""Keyed rate budgets: a budget name that is a template of the event, one bucket per value.

``ctx.tool("github:{data.installation_id}")`` takes a token from the bucket ``github:42``
for an event whose ``data.installation_id`` is 42: the configured budget ``github`` (the
part before the first colon) gives every such bucket its rate and burst, and each bucket
is its own token bucket, with the same guarantee as an unkeyed one. Fields are CloudEvents
attribute names: ``subject``, ``source``, ``type``, ``id``, ``data.<path>`` and
``context.<path>`` (a path's parts separated by dots, list items by their index).

Pure: no Redis here (``ratelimit.Limiter`` takes the tokens).
"""

from __future__ import annotations

import re
from typing import Any

from workers.core.errors import ConfigurationError
from workers.core.events import Envelope

SEPARATOR = ":"
# A rendered bucket name stays a readable, bounded key part.
MAX_BUCKET_CHARS = 200
_FIELD = re.compile(r"\{([^{}]*)\}")
_TOP = ("subject", "source", "type", "id")
_NESTED = ("data", "context")


def base_name(bucket: str) -> str:
    """The configured budget a bucket draws its rate and burst from: ``github:42`` ->
    ``github``; an unkeyed name is its own."""
    return bucket.partition(SEPARATOR)[0]


def is_keyed(bucket: str) -> bool:
    return SEPARATOR in bucket


def is_template(name: str) -> bool:
    return "{" in name or "}" in name


def render(name: str, envelope: Envelope | None) -> str:
    """``name`` with each ``{field}`` replaced by the event's value: the bucket to take
    from. A name without fields is returned as is."""
    if not is_template(name):
        return name
    if not is_keyed(name) or is_template(base_name(name)):
        raise ConfigurationError(
            f"rate budget {name!r}: a keyed budget is BUDGET:TEMPLATE, "
            "e.g. github:{data.installation_id}"
        )
    if is_template(_FIELD.sub("", name)):
        raise ConfigurationError(f"rate budget {name!r}: unbalanced braces in the template")
    if envelope is None:
        raise ConfigurationError(f"rate budget {name!r}: no event to fill the template from")
    rendered = _FIELD.sub(lambda m: _value(name, envelope, m.group(1).strip()), name)
    if len(rendered) > MAX_BUCKET_CHARS:
        raise ConfigurationError(
            f"rate budget {name!r}: the bucket name is over {MAX_BUCKET_CHARS} characters"
        )
    return rendered


def _value(name: str, envelope: Envelope, field: str) -> str:
    head, _, path = field.partition(".")
    if head in _TOP and not path:
        value: Any = getattr(envelope, head)
    elif head in _NESTED and path:
        value = _lookup(getattr(envelope, head) or {}, path.split("."))
    else:
        known = ", ".join([*_TOP, "data.<path>", "context.<path>"])
        raise ConfigurationError(f"rate budget {name!r}: unknown field {field!r} (use {known})")
    if value is None or value == "":
        raise ConfigurationError(f"rate budget {name!r}: the event has no {field}")
    if isinstance(value, dict | list):
        raise ConfigurationError(f"rate budget {name!r}: {field} is not a single value")
    text = str(value).lower() if isinstance(value, bool) else str(value)
    if is_template(text):
        # A brace would end the bucket's cluster hash tag early.
        raise ConfigurationError(f"rate budget {name!r}: {field} has a brace: {text!r}")
    return text


def _lookup(value: Any, parts: list[str]) -> Any:
    for part in parts:
        if isinstance(value, dict):
            value = value.get(part)
        elif isinstance(value, list) and part.isdigit() and int(part) < len(value):
            value = value[int(part)]
        else:
            return None
    return value
