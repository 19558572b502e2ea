"""Blocks of docs/benchmarks.md that separate runs write, each between its own two markers.

``make bench`` (bench.engine) regenerates the engine sections as a whole and carries every
block over from the old document; ``make bench-console`` (bench.console),
``make bench-actions`` (bench.actions), ``make bench-outbox`` (bench.outbox) and
``make bench-runtime`` (bench.runtime) each replace their own block and leave the rest.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Section:
    begin: str  # an HTML comment: invisible in the rendered page
    end: str

    def span(self, document: str) -> tuple[int, int] | None:
        """Where the block is in ``document`` (start, end after the end marker), if there."""
        start = document.find(self.begin)
        end = document.find(self.end, start + 1) if start != -1 else -1
        return (start, end + len(self.end)) if end != -1 else None


def splice(document: str, block: str, section: Section) -> str:
    """``document`` with its ``section`` block replaced by ``block`` (appended if none)."""
    span = section.span(document)
    if span is not None:
        return document[: span[0]] + block.rstrip("\n") + document[span[1] :]
    return document.rstrip("\n") + "\n\n" + block


def carry_over(old_document: str, new_document: str, kept: Iterable[Section]) -> str:
    """``new_document`` with each ``kept`` block of ``old_document``, in that order."""
    for section in kept:
        span = section.span(old_document)
        if span is not None:
            new_document = splice(new_document, old_document[span[0] : span[1]] + "\n", section)
    return new_document


# Written by hand from `make bench-webhooks` (bench.webhooks prints the figures).
WEBHOOKS = Section(
    "<!-- webhooks benchmark: begin (from make bench-webhooks; every bench writer keeps it) -->",
    "<!-- webhooks benchmark: end -->",
)

# Written by `make bench-runtime` (bench/runtime/run.py, bench/runtime/report.py).
RUNTIME = Section(
    "<!-- agent runtime benchmark: begin "
    "(written by bench.runtime; every bench writer keeps it) -->",
    "<!-- agent runtime benchmark: end -->",
)
