"""A failure's fingerprint: what makes two failures "the same error". Pure.

Like an error tracker's grouping: the exception type, the message normalised
(``normalise.py``) and the top frame, the innermost frame of the agent's own code named by
module and function (never by line: an edit above it must not split a group). Frames of
installed packages, of the standard library and of Streamdesk's engine are not the agent's
own. A failure with no traceback (an envelope the engine refused) is grouped by its
dead-letter reason and normalised message.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

from workers.errors.normalise import normalise
from workers.errors.tracebacks import Frame, parse

# How many hex digits of the sha256 a fingerprint keeps: 64 bits, short enough for a URL
# and a key name, far past any chance of two groups meeting.
DIGEST_CHARS = 16
_LIBRARY_MARKERS = ("/site-packages/", "/dist-packages/")
# Streamdesk's own modules that are not an agent's: the engine that called it. The example
# apps are agents like any other.
_ENGINE = "workers."
_AGENT_PACKAGES = ("workers.examples.",)


@dataclass(frozen=True, slots=True)
class PathRoots:
    """Where the running Python finds modules (``sys.path``) and where its standard library
    lives, so a frame's file names its module (``/srv/app/billing/agents.py`` ->
    ``billing.agents``) the same on every host and checkout."""

    search: tuple[str, ...] = ()
    library: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Fingerprint:
    digest: str  # DIGEST_CHARS hex digits naming the group
    kind: str  # the exception type, or ``reason:<dead-letter reason>`` without a traceback
    message: str  # normalised
    frame: str  # "module.function" of the top frame, "" if none


def fingerprint(error: str, reason: str = "", roots: PathRoots | None = None) -> Fingerprint:
    """The fingerprint of one failure's error text (a traceback or a message)."""
    parsed = parse(error)
    kind = parsed.kind or f"reason:{reason or 'error'}"
    message = normalise(parsed.message)
    frame = top_frame(parsed.frames, roots or PathRoots())
    material = "\x1f".join((kind, message, frame)).encode("utf-8", "backslashreplace")
    return Fingerprint(hashlib.sha256(material).hexdigest()[:DIGEST_CHARS], kind, message, frame)


def top_frame(frames: tuple[Frame, ...], roots: PathRoots) -> str:
    """``module.function`` of the innermost frame of the agent's own code, else of the
    innermost frame at all; "" without frames."""
    named = [(module_of(f.path, roots.search), f) for f in frames]
    own = [(m, f) for m, f in named if not _library(f.path, m, roots)]
    chosen = (own or named)[-1:] if named else []
    return "".join(f"{m}.{f.function}" for m, f in chosen)


def module_of(path: str, search: tuple[str, ...]) -> str:
    """The module a file is, from its path: after ``site-packages/``, else after the longest
    search root that holds it, else its file name alone."""
    path = path.replace("\\", "/")
    for marker in _LIBRARY_MARKERS:
        if marker in path:
            return _dotted(path.rsplit(marker, 1)[1])
    holding = [r.rstrip("/") + "/" for r in search if r and path.startswith(r.rstrip("/") + "/")]
    if holding:
        return _dotted(path[len(max(holding, key=len)) :])
    return _dotted(path.rsplit("/", 1)[-1])


def _dotted(relative: str) -> str:
    name = relative.removesuffix(".py").removesuffix("/__init__")
    return name.strip("/").replace("/", ".")


def _library(path: str, module: str, roots: PathRoots) -> bool:
    """Not the agent's own: an installed package, the standard library, Python's own
    ``<frozen ...>`` frames, or Streamdesk's engine."""
    path = path.replace("\\", "/")
    if path.startswith("<") or any(m in path for m in _LIBRARY_MARKERS):
        return True
    if any(path.startswith(lib.rstrip("/") + "/") for lib in roots.library if lib):
        return True
    return module.startswith(_ENGINE) and not module.startswith(_AGENT_PACKAGES)
