"""Values as a database column takes them, where that loses nothing. Pure.

A text column takes neither NUL (PostgreSQL refuses it) nor a lone surrogate (no UTF-8 for
it), and JSON has no NaN or Infinity (SQLite's ``JSON_VALID`` and PostgreSQL's jsonb refuse
them). Error texts and timeline details are diagnostics: those characters are written as
their escapes, so every character keeps its identity. Results are data: they are encoded as
strict JSON, and one the database cannot hold is refused by the settler as ``unstorable``.
"""

from __future__ import annotations

import json
import traceback
from typing import Any

from workers.core.redact import redact_text

_STRICT_JSON = json.JSONEncoder(allow_nan=False)


def encodable(text: str) -> str:
    """``text`` with its lone surrogates written as escapes (``\\ud800``): no UTF-8 encoder (a
    Redis command, a log file, a page) can write them, and the rest of the text is kept."""
    if text.isascii():
        return text
    return text.encode("utf-8", "backslashreplace").decode("utf-8")


def storable_text(text: str) -> str:
    return encodable(text).replace("\x00", "\\x00")


def strict_json(value: Any) -> str:
    """JSON text, raising ``ValueError`` for NaN and the infinities instead of writing them."""
    try:
        return _STRICT_JSON.encode(value)
    except ValueError as exc:
        raise ValueError(f"not JSON: it holds NaN or Infinity ({exc})") from exc


def storable_message(exc: BaseException) -> str:
    """The database's message, in one storable paragraph (psycopg adds DETAIL lines)."""
    return storable_text(" ".join(str(exc).split()) or type(exc).__name__)


def exception_line(text: str) -> str:
    """The exception line of a ``describe`` text (its last): what an operator reads first."""
    lines = [line for line in text.strip().splitlines() if line.strip()]
    return lines[-1].strip() if lines else ""


def describe(exc: BaseException, limit: int = 8000) -> str:
    """The exception and its traceback, bounded so a huge error cannot bloat a row, and
    encodable: an error text is written to Redis (a dead letter), logs and pages as it is."""
    text = redact_text(encodable("".join(traceback.format_exception(exc)).strip()))
    return text if len(text) <= limit else f"{text[: limit // 2]}\n...\n{text[-limit // 2 :]}"
