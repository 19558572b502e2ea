"""An error message with its variable parts replaced by placeholders, so that two failures
that differ only in an id, a number or a quoted value read the same (Sentry's "message
parameterization"). Pure."""

from __future__ import annotations

import re

# What a message is cut to before it is normalised: a huge message (a dumped payload) must
# not make the fingerprint slow, and its first few hundred characters say what it is.
MAX_MESSAGE_CHARS = 500

# In order: a quoted value first (whatever it holds, numbers included), then the patterns
# that contain digits (a uuid, a date, a stream entry id, a hex number, an address) before
# a bare number would take their digits apart.
_PATTERNS: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"'[^'\n]{0,200}'|\"[^\"\n]{0,200}\"|`[^`\n]{0,200}`"), "<str>"),
    (
        re.compile(
            r"\b[0-9a-fA-F]{8}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{12}\b"
        ),
        "<uuid>",
    ),
    (
        re.compile(
            r"\b\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:Z|[+-]\d{2}:?\d{2})?)?\b"
        ),
        "<date>",
    ),
    (re.compile(r"\b\d+-\d+\b"), "<id>"),
    (re.compile(r"\b0[xX][0-9a-fA-F]+\b"), "<hex>"),
    # A long run of hex digits with at least one digit: a hash, a token, an object id.
    (re.compile(r"\b(?=[0-9a-fA-F]*\d)[0-9a-fA-F]{8,}\b"), "<hex>"),
    (re.compile(r"\b\d{1,3}(?:\.\d{1,3}){3}(?::\d+)?\b"), "<ip>"),
    (re.compile(r"\b\d+(?:\.\d+)?\b"), "<num>"),
)
_SPACES = re.compile(r"\s+")


def normalise(message: str) -> str:
    """``message`` on one line, cut to ``MAX_MESSAGE_CHARS``, with quoted values, uuids,
    dates, hex numbers (memory addresses included), IP addresses, entry ids and numbers
    replaced by ``<str>``, ``<uuid>``, ``<date>``, ``<hex>``, ``<ip>``, ``<id>``, ``<num>``.
    A number inside a word (``utf8``, ``v2``) is part of the word and stays."""
    text = _SPACES.sub(" ", message).strip()[:MAX_MESSAGE_CHARS]
    for pattern, placeholder in _PATTERNS:
        text = pattern.sub(placeholder, text)
    return text
