"""What travels over the channel layer and the websocket: group names and message shapes."""

from __future__ import annotations

import json
from typing import Literal, TypedDict

# Every console socket joins this channel-layer group; the sampler broadcasts to it.
DASHBOARD_GROUP = "dashboard"
TICK_TYPE = "dashboard.tick"


# uPlot's data layout: times (s) first, then one list of values per line; null is a gap.
Columns = list[list[float | None]]


class ChartData(TypedDict):
    """One chart's lines at each range ("5m", "1h", "24h"), as console/live/charts.py computes them.

    ``full``: the whole range (the page's first render); else only its last rows, which the
    browser merges by time into what it has."""

    title: str
    unit: str
    labels: list[str]
    full: bool
    ranges: dict[str, Columns]


class PageSeries(TypedDict):
    """A page's charts at its first render (``json_script`` "chart-series"): the sample's time
    (the charts' right edge until the first tick) and each chart's full ranges."""

    at_ms: int
    charts: dict[str, ChartData]


class TickMessage(TypedDict):
    """Channel layer -> consumer: one sampler tick, every live fragment already rendered, and
    the charts' newest rows by the live name of the page part they belong to."""

    type: Literal["dashboard.tick"]
    at_ms: int
    fragments: dict[str, str]
    series: dict[str, dict[str, ChartData]]


class TickPayload(TypedDict):
    """Consumer -> browser: the fragments this page shows, keyed by their ``data-live`` name,
    and its charts' newest rows, keyed by chart (``chart_key``)."""

    at_ms: int
    fragments: dict[str, str]
    series: dict[str, ChartData]


class SubscribeMessage(TypedDict):
    """Browser -> consumer: the ``data-live`` names on the page."""

    subscribe: list[str]


def overview_key() -> str:
    return "overview"


def workers_key() -> str:
    return "workers"


def jobs_key() -> str:
    return "jobs"


def redis_key() -> str:
    return "redis"


def redis_summary_key() -> str:
    """The overview's one line about the server (console/live/redis_panel.py)."""
    return "redis-summary"


def stream_key(stream: str) -> str:
    return f"stream:{stream}"


def group_key(stream: str, group: str) -> str:
    return f"group:{stream}:{group}"


def agent_key(event_type: str) -> str:
    """An agent's page part (its charts); the agent is its event type today."""
    return f"agent:{event_type}"


def chart_key(kind: str, part: str) -> str:
    """A chart of one page part (``stream_key``/``group_key``): the slot's ``data-chart``."""
    return f"chart:{kind}:{part}"


OPERATOR_SUFFIX = "#operate"


def operator_variant(key: str) -> str:
    """The name of a fragment's variant with action buttons, sent to operators only."""
    return f"{key}{OPERATOR_SUFFIX}"


def is_operator_variant(name: str) -> bool:
    """Never a subscription name: a socket gets a variant only through its role."""
    return name.endswith(OPERATOR_SUFFIX)


# Live tables (console/live/tables.py): rows read per table shown, not from the sample.
TABLE_PREFIX = "table:"
PENDING_TABLE = "pending"
RETRIES_TABLE = "retries"
DEAD_TABLE = "dead"
TABLE_KINDS = (PENDING_TABLE, RETRIES_TABLE, DEAD_TABLE)
MAX_NAME = 4096


def table_key(kind: str, stream: str, group: str = "") -> str:
    """A live table's name: its kind, then its stream and group as JSON (names may hold
    any character, ``:`` included, and must come back whole)."""
    return f"{TABLE_PREFIX}{kind}:{json.dumps([stream, group], ensure_ascii=False)}"


def is_table_key(name: str) -> bool:
    return name.startswith(TABLE_PREFIX)


def parse_table_key(name: str) -> tuple[str, str, str]:
    """(kind, stream, group) of a ``table_key``; ValueError for any other name."""
    kind, _, where = name.removeprefix(TABLE_PREFIX).partition(":")
    try:
        parsed = json.loads(where) if kind in TABLE_KINDS and len(where) < MAX_NAME else None
    except RecursionError as exc:  # a browser may send anything
        raise ValueError("not a live table") from exc
    if not (
        isinstance(parsed, list) and len(parsed) == 2 and all(isinstance(p, str) for p in parsed)
    ):
        raise ValueError(f"not a live table: {name[:80]!r}")
    return kind, parsed[0], parsed[1]
