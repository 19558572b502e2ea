"""The Runs page part of ``make bench-console``: for each database kind (SQLite, and
PostgreSQL when reachable), a database of its own, N runs inserted, the page timed
(bench/console/runs_measure.py in a subprocess, from the frozen code snapshot)."""

from __future__ import annotations

import json
import subprocess
from dataclasses import dataclass

from bench.common.databases import KIND_NAMES, POSTGRES
from bench.common.harness import PRODUCTION_ENV, PYTHON, Bench, BenchError, log_tail

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
    plan_path, out_path = bench.tmp / f"runs-{kind}-plan.json", bench.tmp / f"runs-{kind}.json"
    plan_path.write_text(json.dumps({"rows": rows, "repeats": repeats, "warmup": warmup}))
    log = bench.log_path(f"runs-{kind}")
    with open(log, "wb") as out:
        done = subprocess.run(
            [PYTHON, "-m", "bench.console.runs_measure", str(plan_path), str(out_path)],
            cwd=bench.src,
            env={**on.env(db), **PRODUCTION_ENV},
            stdout=out,
            stderr=subprocess.STDOUT,
            timeout=MEASURE_TIMEOUT_S,
            check=False,
        )
    if done.returncode != 0:
        raise BenchError(f"bench.console.runs_measure exited {done.returncode}:\n{log_tail(log)}")
    result = json.loads(out_path.read_text())
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
