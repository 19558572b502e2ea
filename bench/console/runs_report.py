"""The Runs page part of the console block of docs/benchmarks.md (issue 32's target: p95
under 100 ms at 1,000,000 runs, on SQLite and on PostgreSQL)."""

from __future__ import annotations

import math
import statistics

from bench.common.report import yes
from bench.console.runs_bench import RunsTimings

TARGET_MS = 100.0
LABELS = {
    "newest": "no filter, newest page",
    "type": "agent / event type",
    "status failed": "status failed (5%)",
    "status cancelled": "status cancelled (1%)",
    "subject": "subject (10 runs)",
    "one day": "created in one day",
    "error common": "error text, frequent",
    "error absent": "error text, no match (reads the whole window)",
    "type + status": "type + status dead",
    "type + status + day": "type + status failed + one day",
    "type + error": "type + error text",
    "sparse + error": "status cancelled (1%) + error text, no match",
    "type + status + error": "type + status failed + error text",
    "page 50": "page 50 by its cursor",
    "page 50, type": "page 50 by its cursor, with a type",
    "newer from page 50": "Newer from page 50",
}


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[max(0, math.ceil(q * len(ordered)) - 1)]


def worst(t: RunsTimings) -> tuple[str, float]:
    """The query with the highest p95, and that p95."""
    name = max(t.ms, key=lambda n: pct(t.ms[n], 0.95))
    return name, pct(t.ms[name], 0.95)


def met(t: RunsTimings) -> bool:
    return worst(t)[1] < TARGET_MS


def target_rows(runs: list[RunsTimings]) -> list[str]:
    """One row per database kind for the console block's Targets table."""
    rows = []
    for t in runs:
        name, p95 = worst(t)
        rows.append(
            f"| Runs page at {t.rows:,} runs ({t.name}), every filter and page 50, "
            f"under {TARGET_MS:g} ms | slowest p95 {p95:.1f} ms ({LABELS[name]}) | {yes(met(t))} |"
        )
    return rows


def _cells(values: list[float]) -> str:
    return f"{statistics.median(values):.1f} | {pct(values, 0.95):.1f}"


def section(runs: list[RunsTimings], repeats: int, skipped: str) -> str:
    if not runs:
        return ""
    heads = " | ".join(f"{t.name} p50 | {t.name} p95" for t in runs)
    table = [
        f"| query (`/runs/?...`) | shows | {heads} |",
        "| --- | --- | " + " | ".join("---: | ---:" for _ in runs) + " |",
    ]
    for key, label in LABELS.items():
        cells = " | ".join(_cells(t.ms[key]) for t in runs)
        table.append(f"| {label} | `{runs[0].queries[key] or '(none)'}` | {cells} |")
    built = "; ".join(f"{t.name} ({t.server}): {t.insert_s:.0f} s" for t in runs)
    note = f"\n\nPostgreSQL was not measured: {skipped}." if skipped else ""
    return f"""### Runs page at {runs[0].rows:,} runs

`GET /runs/?...` through `django.test.Client` as a signed-in staff user (routing, middleware,
session, the filter form, the keyset query, the template), {repeats} rounds of every query, in
a database of its own per kind holding {runs[0].rows:,} `AgentRun` rows written by one
`INSERT ... SELECT` (bench/console/runs_data.py: 20 event types, 90% succeeded, 5% failed, 3%
dead, a subject per 10 runs, tracebacks on failed and dead runs, one run every 2.5 s). Inserted
in: {built}; PostgreSQL's statistics then taken (`ANALYZE`, as autovacuum would), SQLite's
not (the project never runs `ANALYZE`), and neither vacuumed (the newest rows of a busy table
are not yet, so index-only scans still read the heap). Times in ms. Error text is searched
within the next {runs[0].error_scan_rows:,} runs matching the other filters (console/reads/runs.py
`ERROR_SCAN_ROWS`): its cost is bounded by that window, not by the table, and is highest
when the other filters are sparse (their runs scattered over the whole table).{note}

{chr(10).join(table)}
"""
