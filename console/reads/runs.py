"""The Runs page's read: ``AgentRun`` rows, newest first, filtered, a keyset page at a time.

Pages are cut by the key ``(created_at, id)``, never by a page's OFFSET, and nothing counts
the table: each page reads a page and one row along an index that matches its filters
(workers/migrations/0015_agentrun_runs_indexes.py). Error text cannot be found through a
btree, so its search is bounded: it looks at the next ``ERROR_SCAN_ROWS`` runs past the
cursor that match the other filters, and the next page searches on from where it stopped.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from typing import Literal

from django.db.models import Q, QuerySet

from workers.models import AgentRun

PAGE_SIZE = 25
# How many runs one page's error-text search reads at most (a substring match reads each).
ERROR_SCAN_ROWS = 5_000
# The columns a row shows: the result (JSON, maybe large) and the leases stay in the table.
ROW_FIELDS = (
    "id",
    "event_hash",
    "event_type",
    "subject",
    "status",
    "attempts",
    "created_at",
    "duration_ms",
    "version",
    "agent",
    "event_key",
    "replay_of",
    "prompt_tokens",
    "completion_tokens",
    "cost_usd",
    "error",
)
EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
# ``<microseconds since 1970>.<id>``: readable in a URL, and exact (no float rounding).
CURSOR = re.compile(r"([0-9]{1,19})\.([0-9]{1,19})")
MAX_ID = 2**63 - 1

Direction = Literal["older", "newer"]


class BadCursor(ValueError):
    """A page cursor that this module did not write (or that names no moment)."""


@dataclass(frozen=True, slots=True)
class Cursor:
    """A row's place in the newest-first order; a page starts just past it."""

    created_at: datetime
    id: int

    def encode(self) -> str:
        return f"{(self.created_at - EPOCH) // timedelta(microseconds=1)}.{self.id}"

    @classmethod
    def decode(cls, text: str) -> Cursor:
        found = CURSOR.fullmatch(text.strip())
        if found is None or int(found[2]) > MAX_ID:
            raise BadCursor(
                f"{text[:40]!r} is not a page cursor (they look like 1765000000000000.42)"
            )
        try:
            at = EPOCH + timedelta(microseconds=int(found[1]))
        except OverflowError:
            raise BadCursor(f"{text[:40]!r} names no date a run can have") from None
        return cls(at, int(found[2]))

    @classmethod
    def of(cls, run: AgentRun) -> Cursor:
        return cls(run.created_at, run.id)


@dataclass(frozen=True, slots=True)
class RunFilter:
    """What the operator asked for; blank fields do not filter."""

    event_type: str = ""
    status: str = ""
    subject: str = ""
    created_from: datetime | None = None
    created_to: datetime | None = None
    error: str = ""
    # A named agent's runs (``AgentRun.agent``), or a home agent's: its type's runs by the
    # agent without a name (``home_of``, the type). At most one of the two.
    agent: str = ""
    home_of: str = ""
    # The agent's version: no index of its own, so it narrows what another filter reads.
    version: str = ""

    def narrows(self) -> bool:
        dates = (self.created_from, self.created_to)
        names = (self.event_type, self.status, self.subject, self.agent, self.home_of)
        return any((*names, self.version, *dates))

    def _exact(self) -> dict[str, str]:
        wanted = {
            "subject": self.subject,
            "event_type": self.event_type,
            "status": self.status,
            "agent": self.agent,
        }
        return {field: value for field, value in wanted.items() if value}

    def only_exact(self) -> str:
        """The one indexed equality filter set (subject, type, status or a named agent), if
        just one is and nothing else narrows by equality."""
        exact = self._exact()
        if self.home_of or self.version:
            return ""
        return next(iter(exact)) if len(exact) == 1 else ""

    def queryset(self, ranged: str = "") -> QuerySet[AgentRun]:
        """The runs matching every filter but the error text (which is bounded apart).
        ``ranged``: that equality filter as ``>= v AND <= v`` (see ``_window_edge``)."""
        runs = AgentRun.objects.all()
        for field, value in self._exact().items():
            same = {f"{field}__gte": value, f"{field}__lte": value} if field == ranged else {}
            runs = runs.filter(**(same or {field: value}))
        if self.home_of:  # along the type's index; the agent without a name is a residual
            runs = runs.filter(event_type=self.home_of, agent="")
        if self.version:
            runs = runs.filter(version=self.version)
        if self.created_from is not None:
            runs = runs.filter(created_at__gte=self.created_from)
        if self.created_to is not None:
            runs = runs.filter(created_at__lt=self.created_to)
        return runs


@dataclass(frozen=True, slots=True)
class RunsPage:
    rows: list[AgentRun]
    older: Cursor | None  # where the next older page starts (None: this one is the oldest)
    newer: Cursor | None  # where the next newer page starts (None: this one is the newest)
    # The error-text search read this many runs for this page (0: no error filter).
    error_scanned: int = 0


def _past(
    runs: QuerySet[AgentRun], cursor: Cursor, direction: Direction, inclusive: bool = False
) -> QuerySet[AgentRun]:
    """Rows past ``cursor`` (and the cursor's own, ``inclusive``). ``created_at <=`` first
    bounds the index range (an OR of the two comparisons alone is no index condition in
    PostgreSQL)."""
    at, pk = cursor.created_at, cursor.id
    if direction == "older":
        beyond = Q(id__lte=pk) if inclusive else Q(id__lt=pk)
        return runs.filter(Q(created_at__lt=at) | beyond, created_at__lte=at)
    beyond = Q(id__gte=pk) if inclusive else Q(id__gt=pk)
    return runs.filter(Q(created_at__gt=at) | beyond, created_at__gte=at)


def _ordered(runs: QuerySet[AgentRun], direction: Direction, lead: str = "") -> QuerySet[AgentRun]:
    fields = (lead, "created_at", "id") if lead else ("created_at", "id")
    return runs.order_by(*(f"-{f}" for f in fields) if direction == "older" else fields)


def _back(direction: Direction) -> Direction:
    return "newer" if direction == "older" else "older"


def _window_edge(wanted: RunFilter, cursor: Cursor | None, direction: Direction) -> Cursor | None:
    """The key of the last run of the error search's window: the ``ERROR_SCAN_ROWS``-th
    past the cursor (None: fewer are left, the window reaches the end). Its OFFSET walks a
    fixed number of index entries, whichever page this is.

    With one equality filter, that index gives the order: but PostgreSQL, its statistics
    saying a type is 5% of the runs and the newest rows not yet vacuumed, walked
    ``(created_at, id)`` instead, through 200,000 rows (30-90 ms at 1M runs). Asked as a
    range and ordered by that column first, only its own index serves it (3 ms)."""
    lead = wanted.only_exact()
    runs = wanted.queryset(ranged=lead)
    if cursor is not None:
        runs = _past(runs, cursor, direction)
    keys = _ordered(runs, direction, lead).values_list("created_at", "id")
    last = keys[ERROR_SCAN_ROWS - 1 : ERROR_SCAN_ROWS]
    return Cursor(*last[0]) if last else None


def _search(
    runs: QuerySet[AgentRun], wanted: RunFilter, cursor: Cursor | None, direction: Direction
) -> tuple[list[AgentRun], Cursor | None]:
    """Up to a page and one of ``runs`` (those past the cursor) whose error contains the
    text, among the next ``ERROR_SCAN_ROWS``, and the window's edge. The window is a key
    range (both ends on the index), not ``id IN (subquery)``: PostgreSQL scanned the whole
    table for that."""
    edge = _window_edge(wanted, cursor, direction)
    scope = runs if edge is None else _past(runs, edge, _back(direction), inclusive=True)
    matches = scope.filter(error__icontains=wanted.error)
    matches = _ordered(matches, direction).only(*ROW_FIELDS)
    return list(matches[: PAGE_SIZE + 1]), edge


def _rows(
    wanted: RunFilter, cursor: Cursor | None, direction: Direction
) -> tuple[list[AgentRun], Cursor | None]:
    """Up to a page of rows past the cursor, in ``direction``'s order, and where the next
    page that way starts (None: nothing lies beyond)."""
    runs = wanted.queryset()
    if cursor is not None:
        runs = _past(runs, cursor, direction)
    if not wanted.error:
        found, edge = list(_ordered(runs, direction).only(*ROW_FIELDS)[: PAGE_SIZE + 1]), None
    else:
        found, edge = _search(runs, wanted, cursor, direction)
    if len(found) > PAGE_SIZE:
        return found[:PAGE_SIZE], Cursor.of(found[PAGE_SIZE - 1])
    # Fewer matches than a page, yet the search window may have ended before the runs did:
    # the next page searches on from its edge (so an empty page can have a next one).
    if edge is not None and _past(runs, edge, direction).exists():
        return found, edge
    return found, None


def page(
    wanted: RunFilter, older_than: Cursor | None = None, newer_than: Cursor | None = None
) -> RunsPage:
    """The page just older than ``older_than``, just newer than ``newer_than``, or the
    newest (neither)."""
    scanned = ERROR_SCAN_ROWS if wanted.error else 0
    if newer_than is None:
        rows, next_older = _rows(wanted, older_than, "older")
        if older_than is None:
            return RunsPage(rows, next_older, None, scanned)
        # Rows newer than the first shown; on an empty page, from the cursor's run itself.
        back = Cursor.of(rows[0]) if rows else replace(older_than, id=older_than.id - 1)
        return RunsPage(rows, next_older, back, scanned)
    # At the top this page may be short: topping it up from older runs would show some twice.
    rows, next_newer = _rows(wanted, newer_than, "newer")
    rows.reverse()
    back = Cursor.of(rows[-1]) if rows else replace(newer_than, id=newer_than.id + 1)
    return RunsPage(rows, back, next_newer, scanned)
