"""A timed part of the console benchmark run as a subprocess from the frozen code snapshot:
``python -m <module> PLAN.json RESULT.json``, its output in the run's log."""

from __future__ import annotations

import json
import subprocess
from typing import Any

from bench.common.harness import PYTHON, Bench, BenchError, log_tail


def run_child(
    bench: Bench,
    module: str,
    name: str,
    plan: dict[str, Any],
    env: dict[str, str],
    timeout_s: float,
) -> Any:
    """Write ``plan``, run ``module`` on it, and return the JSON it wrote (BenchError if it
    failed, with its log's tail)."""
    plan_path, out_path = bench.tmp / f"{name}-plan.json", bench.tmp / f"{name}-result.json"
    plan_path.write_text(json.dumps(plan))
    log = bench.log_path(name)
    with open(log, "wb") as out:
        done = subprocess.run(
            [PYTHON, "-m", module, str(plan_path), str(out_path)],
            cwd=bench.src,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            timeout=timeout_s,
            check=False,
        )
    if done.returncode != 0:
        raise BenchError(f"{module} exited {done.returncode}:\n{log_tail(log)}")
    return json.loads(out_path.read_text())
