"""Errors grouped the way error trackers group them: a failure's fingerprint (its exception
type, its message with ids, numbers and quoted values normalised away, and the innermost
frame of the agent's own code) names the group it belongs to (docs/console.md#errors).

Pure: this package reads text and returns values. It imports the standard library only (no
Redis, no Django, no other part of ``workers``), so the dead-letter path, the console, the
command line and the unit tests compute the same fingerprint from the same error text.
"""

from __future__ import annotations

from workers.errors.fingerprint import Fingerprint, PathRoots, fingerprint
from workers.errors.normalise import normalise
from workers.errors.tracebacks import Frame, Parsed, parse

__all__ = ["Fingerprint", "Frame", "Parsed", "PathRoots", "fingerprint", "normalise", "parse"]
