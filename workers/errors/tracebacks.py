"""A Python traceback, as ``traceback.format_exception`` writes it, read back: its frames
and the exception's type and message. Pure.

A dead letter keeps its error as text (``workers/core/storable.describe``), so this reads
the text, not the exception: the same reading serves a letter written a week ago. Of a
chained exception ("The above exception was the direct cause...") only the last one
counts: that is what the agent raised. Text that is not a traceback (an envelope the engine
refused: "unknown event type ...") is a message without a type or frames.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

HEADER = "Traceback (most recent call last):"
_FRAME = re.compile(r'^\s*File "(?P<path>.+)", line (?P<line>\d+), in (?P<function>.+?)\s*$')
_EXCEPTION = re.compile(r"^(?P<kind>(?:[A-Za-z_]\w*\.)*[A-Za-z_]\w*)(?::\s?(?P<message>.*))?$")


@dataclass(frozen=True, slots=True)
class Frame:
    path: str
    line: int
    function: str


@dataclass(frozen=True, slots=True)
class Parsed:
    kind: str  # the exception's type as printed ("KeyError", "app.errors.Refused"); "" if none
    message: str  # its message (all its lines), or the whole text when it is no traceback
    frames: tuple[Frame, ...]  # outermost first, as printed


def parse(text: str) -> Parsed:
    """The last exception of a traceback text: its type, message and frames."""
    lines = text.strip().splitlines()
    starts = [i for i, line in enumerate(lines) if line.strip() == HEADER]
    if not starts:
        return Parsed("", text.strip(), ())
    frames: list[Frame] = []
    at = starts[-1] + 1
    while at < len(lines) and (lines[at][:1].isspace() or lines[at].strip() == "..."):
        if found := _FRAME.match(lines[at]):
            frames.append(Frame(found["path"], int(found["line"]), found["function"]))
        at += 1
    kind, message = _exception(lines[at:])
    return Parsed(kind, message, tuple(frames))


def _exception(lines: list[str]) -> tuple[str, str]:
    """The exception line ``Type: message`` and the message's further lines."""
    if not lines:
        return "", ""
    found = _EXCEPTION.match(lines[0].strip())
    if not found:
        return "", "\n".join(lines).strip()
    rest = [found["message"] or "", *lines[1:]]
    return found["kind"], "\n".join(rest).strip()
