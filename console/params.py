"""What a URL or a query string may carry, checked once for every page and the API.

Redis takes any bytes as a stream or group name and ids up to 2^64-1; it refuses the rest
with an error that would surface as a 500. Names travel in paths through ``NameConverter``
(reversible for every name); ids and numbers are checked here before they reach Redis or
the database, so a bad one is a 400 that says what is wrong.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from typing import Any

from django import forms
from django.core.exceptions import ValidationError
from django.urls import register_converter

MAX_U64 = 2**64 - 1
# Database integers and Redis' signed counts (XPENDING IDLE is a signed 64-bit ms count).
MAX_I64 = 2**63 - 1
# A century: an idle or age filter longer than any entry can have been pending.
MAX_AGE_S = 100 * 365 * 86_400
# Python's datetimes end with the year 9999; Redis takes entry ids up to 2^64-1 ms (any
# client may XADD one), so an id's clock may have no date to show.
# (Integer arithmetic: the float timestamp rounds up to the year 10000.)
MAX_DATETIME_MS = (datetime.max - datetime(1970, 1, 1)) // timedelta(milliseconds=1)

# ASCII digits only (``\d`` takes other scripts' digits, which int() reads and Redis refuses).
ENTRY_ID = re.compile(r"([0-9]{1,20})(?:-([0-9]{1,20}))?")
ENTRY_ID_HELP = "An entry id looks like 1700000000000-0 (each part at most 2^64-1)."


def valid_entry_id(value: str) -> bool:
    """``<ms>`` or ``<ms>-<seq>``, each part a number Redis can hold."""
    found = ENTRY_ID.fullmatch(value)
    if found is None:
        return False
    return all(int(part) <= MAX_U64 for part in found.groups() if part is not None)


def moment_of_ms(ms: float) -> datetime | None:
    """A millisecond clock (an entry id's, a sample's) as UTC; None past the year 9999 or
    before 1970, which no page can show as a date (shown as the number instead)."""
    if not 0 <= ms <= MAX_DATETIME_MS:
        return None
    return datetime.fromtimestamp(ms / 1000, tz=UTC)


def datable_id(entry_id: str) -> bool:
    """A valid entry id whose clock is a date (not past the year 9999)."""
    return valid_entry_id(entry_id) and int(entry_id.split("-", 1)[0]) <= MAX_DATETIME_MS


def check_entry_id(value: str) -> None:
    """Form validator: blank passes (the field is optional), a bad id says what one is."""
    if value.strip() and not valid_entry_id(value.strip()):
        raise ValidationError(ENTRY_ID_HELP, code="entry_id")


def entry_id_field() -> forms.CharField:
    return forms.CharField(required=False, max_length=41, validators=[check_entry_id])


def count_field(label: str, max_value: int = MAX_I64) -> forms.IntegerField:
    """A non-negative whole number with an upper bound (Django's own bound check says so)."""
    return forms.IntegerField(required=False, min_value=0, max_value=max_value, label=label)


# ``~`` escapes in path segments: ``~7E`` is ``~``, ``~2F`` is ``/`` (paths are decoded
# before routing, so ``%2F`` cannot carry a slash), ``~2E`` a dot of a dots-only name (``..``
# would be folded by the browser), and a lone ``~`` the empty name.
_ESCAPE = re.compile(r"~([0-9A-F]{2})")
_ESCAPABLE = {"~", "/", "."}


class NameConverter:
    """A stream or group name as one path segment; every name Redis allows round-trips."""

    regex = "[^/]+"

    def to_python(self, value: str) -> str:
        if value == "~":
            return ""
        rest = _ESCAPE.sub("", value)
        if "~" in rest:
            raise ValueError(f"{value!r} is not an escaped name")
        decoded = _ESCAPE.sub(lambda m: chr(int(m.group(1), 16)), value)
        if any(chr(int(m, 16)) not in _ESCAPABLE for m in _ESCAPE.findall(value)):
            raise ValueError(f"{value!r} escapes a character that needs no escape")
        return decoded

    def to_url(self, value: Any) -> str:
        name = str(value)
        if name == "":
            return "~"
        out = name.replace("~", "~7E").replace("/", "~2F")
        if set(out) == {"."}:
            out = out.replace(".", "~2E")
        return out


# Here, not in urls.py: console/actions/api.py's patterns use it too, and a pattern looks its
# converters up when it is built.
register_converter(NameConverter, "name")
