"""The Runs page part of ``make bench-console``: for each database kind (SQLite, and
PostgreSQL when reachable), a database of its own, N runs inserted, the page timed
(bench/console/runs_measure.py in a subprocess, from the frozen code snapshot)."""

from __future__ import annotations

from dataclasses import dataclass

from bench.common.databases import KIND_NAMES, POSTGRES
from bench.common.harness import PRODUCTION_ENV, Bench
from bench.console.child import run_child

MEASURE_TIMEOUT_S = 1_800.0


@dataclass(frozen=True, slots=True)
class RunsTimings:
    kind: str  # bench.common.databases.SQLITE or POSTGRES
    server: str  # e.g. "SQLite 3.45.1", "PostgreSQL 16.4"
    rows: int
    insert_s: float
    queries: dict[str, str]  # name -> the query string timed
    ms: dict[str, list[float]]  # name -> one time per round
    error_scan_rows: int  # console/reads/runs.py's ERROR_SCAN_ROWS in the code measured

    @property
    def name(self) -> str:
        return KIND_NAMES[self.kind]


def measure(bench: Bench, kind: str, rows: int, repeats: int, warmup: int) -> RunsTimings:
    on = bench.on(kind)
    db = on.database("runs")
    plan = {"rows": rows, "repeats": repeats, "warmup": warmup}
    env = {**on.env(db), **PRODUCTION_ENV}
    module = "bench.console.runs_measure"
    result = run_child(bench, module, f"runs-{kind}", plan, env, MEASURE_TIMEOUT_S)
    if kind == POSTGRES and on.postgres is not None:
        server = f"{on.postgres.version} ({on.postgres.settings})"
    else:
        server = f"SQLite {result['server']}"
    return RunsTimings(
        kind=kind,
        server=server,
        rows=int(result["rows"]),
        insert_s=float(result["insert_s"]),
        queries=result["queries"],
        ms=result["ms"],
        error_scan_rows=int(result["error_scan_rows"]),
    )
