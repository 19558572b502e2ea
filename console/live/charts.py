"""The charts' data, from recorded history points: plain Python, no I/O.

Each chart is uPlot's column layout: the times (s) first, then one list per line. A rate at a
point is the counter's change since the previous point over the time between their
timestamps (the Redis server's clock), never over an assumed tick. Where two points are more
than two steps of their resolution apart, the recorder was not running: a row of nulls one
step after the earlier point breaks every line there, and the later point's rates are null
(no average is drawn across the gap).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from console.live import realtime
from console.live.realtime import ChartData, Columns
from workers.monitor import agents
from workers.monitor.history import MINUTE, SECOND, TEN_SECONDS, Point, Resolution
from workers.monitor.sample import StreamInfo

# The ranges the page offers and the resolution each one is drawn from.
RANGES: dict[str, Resolution] = {"5m": SECOND, "1h": TEN_SECONDS, "24h": MINUTE}
# Rows a tick carries per range: a browser that missed a few ticks (a slow tab, the first
# tick after the page was rendered) still gets every row. A longer break reloads the series.
TAIL_ROWS = {"5m": 10, "1h": 3, "24h": 2}

Value = float | None
# A chart's values at one point, given the point before it (None at the first point and
# after a gap): one value per line.
Values = Callable[[Point | None, Point], list[Value]]


def _counter(prev: Point | None, point: Point, stream: str, field: str) -> tuple[Any, Any, float]:
    a = prev["s"].get(stream) if prev else None
    b = point["s"].get(stream)
    dt_s = (point["t"] - prev["t"]) / 1000 if prev else 0.0
    if a is None or b is None or dt_s <= 0:
        return None, None, 0.0
    return a.get(field), b.get(field), dt_s


def per_s(prev: Point | None, point: Point, stream: str, field: str) -> Value:
    """The counter's rate between the two points; None without both, or after a reset."""
    a, b, dt_s = _counter(prev, point, stream, field)
    if a is None or b is None or b < a:  # a counter that went down was reset: no rate
        return None
    return float(b - a) / dt_s


def hit_ratio_pct(prev: Point | None, point: Point, stream: str) -> Value:
    """Idempotency hits among everything the gate decided between the two points (%)."""
    hits, done = per_s(prev, point, stream, "h"), per_s(prev, point, stream, "p")
    if hits is None or done is None or hits + done == 0:
        return None
    return 100 * hits / (hits + done)


def _group(point: Point, stream: str, group: str) -> list[Any] | None:
    values = point["s"].get(stream, {}).get("g", {}).get(group)
    return values if isinstance(values, list) and len(values) == 3 else None


def acked_per_s(prev: Point | None, point: Point, stream: str, group: str) -> Value:
    """Entries the group read minus those still pending, per second: what it acknowledged."""
    if prev is None or point["t"] <= prev["t"]:
        return None
    a, b = _group(prev, stream, group), _group(point, stream, group)
    if a is None or b is None or a[2] is None or b[2] is None or b[2] < a[2]:
        return None
    acked = (int(b[2]) - int(a[2])) - (int(b[1]) - int(a[1]))
    return max(acked, 0) / (float(point["t"] - prev["t"]) / 1000)


def gauge(point: Point, stream: str, group: str, index: int) -> Value:
    """A group's lag (0) or pending (1) at the point; unknown lag stays unknown (null)."""
    values = _group(point, stream, group)
    return None if values is None or values[index] is None else float(values[index])


def columns(
    points: list[Point], step_ms: int, width: int, values: Values, first: int = 0
) -> Columns:
    """Rows for ``points[first:]`` (the points before ``first`` only give the first rate)."""
    xs: list[Value] = []
    lines: list[list[Value]] = [[] for _ in range(width)]
    prev = points[first - 1] if 0 < first <= len(points) else None
    for point in points[first:]:
        if prev is not None and point["t"] - prev["t"] > 2 * step_ms:
            xs.append((prev["t"] + step_ms) / 1000)
            for line in lines:
                line.append(None)
            prev = None
        xs.append(point["t"] / 1000)
        for line, value in zip(lines, values(prev, point), strict=True):
            # Three decimals are more than a chart shows, and keep the page's JSON small.
            line.append(value if value is None else round(value, 3))
        prev = point
    return [xs, *lines]


@dataclass(frozen=True, slots=True)
class Chart:
    key: str  # realtime.chart_key(...)
    title: str
    unit: str
    labels: list[str]
    values: Values


def stream_chart_keys(stream: str) -> list[str]:
    """The slots of a stream's charts (``stream_charts``' keys, without their groups)."""
    return [realtime.chart_key(kind, realtime.stream_key(stream)) for kind in STREAM_KINDS]


STREAM_KINDS = ("throughput", "backlog", "hits")


def stream_charts(stream: str, groups: list[str]) -> list[Chart]:
    """The overview card's and the stream page's charts of one stream."""
    key = realtime.stream_key(stream)

    def throughput(prev: Point | None, p: Point) -> list[Value]:
        return [per_s(prev, p, stream, f) for f in ("a", "p", "f")]

    def backlog(prev: Point | None, p: Point) -> list[Value]:
        return [gauge(p, stream, g, i) for g in groups for i in (0, 1)]

    return [
        Chart(
            realtime.chart_key("throughput", key),
            "Throughput",
            "events/s",
            ["added", "processed", "failed"],
            throughput,
        ),
        Chart(
            realtime.chart_key("backlog", key),
            "Lag and pending",
            "entries",
            [f"{g} {what}" for g in groups for what in ("lag", "pending")],
            backlog,
        ),
        Chart(
            realtime.chart_key("hits", key),
            "Idempotency hit ratio",
            "%",
            ["hit ratio"],
            lambda prev, p: [hit_ratio_pct(prev, p, stream)],
        ),
    ]


def group_charts(stream: str, group: str) -> list[Chart]:
    """The group page's charts."""
    key = realtime.group_key(stream, group)
    return [
        Chart(
            realtime.chart_key("backlog", key),
            "Lag and pending",
            "entries",
            ["lag", "pending"],
            lambda prev, p: [gauge(p, stream, group, 0), gauge(p, stream, group, 1)],
        ),
        Chart(
            realtime.chart_key("acked", key),
            "Acknowledged",
            "entries/s",
            ["acked"],
            lambda prev, p: [acked_per_s(prev, p, stream, group)],
        ),
    ]


def _types(prev: Point | None, point: Point, event_type: str) -> tuple[Any, Any, float]:
    """The type's entries in two points ("y"), and the seconds between them."""
    if prev is None or "y" not in prev or point["t"] <= prev["t"]:
        return None, None, 0.0
    return prev["y"].get(event_type), point["y"].get(event_type), (point["t"] - prev["t"]) / 1000


def agent_runs(prev: Point | None, point: Point, event_type: str) -> list[Value]:
    """Runs that ended per second between the two points (0 while the type had none yet)."""
    a, b, dt_s = _types(prev, point, event_type)
    if b is None:
        return [0.0 if dt_s > 0 and a is None else None]
    rates = agents.rates(a, b, dt_s)
    return [rates.runs_per_s if rates else None]


def agent_durations(prev: Point | None, point: Point, event_type: str) -> list[Value]:
    """p50, p95 and p99 (ms) of the runs that ended between the two points; null without any."""
    a, b, _ = _types(prev, point, event_type)
    runs = agents.window(a, b) if b is not None else None
    found = [agents.quantile(q, runs) if runs else None for q in (0.5, 0.95, 0.99)]
    return [None if s is None else s * 1000 for s in found]


def agent_tokens(prev: Point | None, point: Point, event_type: str) -> list[Value]:
    """Prompt and completion tokens per second between the two points."""
    a, b, dt_s = _types(prev, point, event_type)
    rates = agents.rates(a, b, dt_s) if b is not None else None
    if rates is None:
        return [0.0, 0.0] if dt_s > 0 and b is None else [None, None]
    return [rates.prompt_tokens_per_s, rates.completion_tokens_per_s]


AGENT_KINDS = ("runs", "durations", "tokens")


def agent_charts(event_type: str) -> list[Chart]:
    """An agent's page charts, from the points' per-type entries ("y")."""
    key = realtime.agent_key(event_type)
    return [
        Chart(
            realtime.chart_key("runs", key),
            "Runs",
            "runs/s",
            ["ended"],
            lambda prev, p: agent_runs(prev, p, event_type),
        ),
        Chart(
            realtime.chart_key("durations", key),
            "Run duration",
            "ms",
            ["p50", "p95", "p99"],
            lambda prev, p: agent_durations(prev, p, event_type),
        ),
        Chart(
            realtime.chart_key("tokens", key),
            "Model tokens",
            "tokens/s",
            ["prompt", "completion"],
            lambda prev, p: agent_tokens(prev, p, event_type),
        ),
    ]


# Whole ranges already computed, by chart, lines and the points they were computed from
# (the first and last point's time and their number identify a range's points, which are
# never changed once recorded): the 1 h and 24 h ranges change every 10 s and every minute,
# not with every page render.
_computed: dict[tuple[str, tuple[str, ...], str, int, int, int], Columns] = {}
MAX_COMPUTED = 1_000


def _whole(chart: Chart, name: str, resolution: Resolution, points: list[Point]) -> Columns:
    if not points:
        return columns(points, resolution.step_ms, len(chart.labels), chart.values)
    key = (chart.key, tuple(chart.labels), name, points[0]["t"], points[-1]["t"], len(points))
    found = _computed.get(key)
    if found is None:
        if len(_computed) >= MAX_COMPUTED:
            _computed.clear()
        found = _computed[key] = columns(
            points, resolution.step_ms, len(chart.labels), chart.values
        )
    return found


def data(chart: Chart, history: dict[str, list[Point]], tail: bool) -> ChartData:
    """One chart at every range: all of each range's points, or only its last rows."""
    ranges: dict[str, Columns] = {}
    for name, resolution in RANGES.items():
        points = history.get(resolution.name, [])
        if tail:
            first = max(len(points) - TAIL_ROWS[name], 0)
            lines = len(chart.labels)
            ranges[name] = columns(points, resolution.step_ms, lines, chart.values, first)
        else:
            ranges[name] = _whole(chart, name, resolution, points)
    return {
        "title": chart.title,
        "unit": chart.unit,
        "labels": chart.labels,
        "full": not tail,
        "ranges": ranges,
    }


def charts_of(streams: list[StreamInfo], types: Iterable[str] = ()) -> dict[str, list[Chart]]:
    """Every chart, by the live name of the page part it belongs to (overview, stream, group,
    agent: ``types`` are the event types whose agents have pages)."""
    out: dict[str, list[Chart]] = {realtime.overview_key(): []}
    for event_type in types:
        out[realtime.agent_key(event_type)] = agent_charts(event_type)
    for stream in streams:
        charts = stream_charts(stream.name, [g.name for g in stream.groups])
        out[realtime.overview_key()] += charts
        out[realtime.stream_key(stream.name)] = charts
        for g in stream.groups:
            out[realtime.group_key(stream.name, g.name)] = group_charts(stream.name, g.name)
    return out


def series(
    charts: dict[str, list[Chart]], history: dict[str, list[Point]], tail: bool
) -> dict[str, dict[str, ChartData]]:
    """Each page part's charts' data, by chart key; each chart computed once."""
    done: dict[str, ChartData] = {}
    out: dict[str, dict[str, ChartData]] = {}
    for name, group in charts.items():
        for chart in group:
            if chart.key not in done:
                done[chart.key] = data(chart, history, tail)
        out[name] = {chart.key: done[chart.key] for chart in group}
    return out
