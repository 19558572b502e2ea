"""The "Transactional outbox" block of docs/benchmarks.md (``make bench-outbox``).

``make bench``, ``make bench-console`` and ``make bench-actions`` keep this block as it is;
this writer keeps theirs (bench/common/report.py). No Django here.
"""

from __future__ import annotations

from dataclasses import dataclass

from bench.common.report import OUTBOX, OUTBOX_SUITE, whole


@dataclass(frozen=True, slots=True)
class OutboxResults:
    began: float
    ended: float
    command: str
    database: str
    waits: str
    valkey: str
    cpus: int
    rows: int
    txn_rows: int
    batch: int
    relay: float  # rows/s, median of the repeats
    relay_runs: list[float]
    ceiling: float  # envelopes/s, plain pipelined XADD
    emit: float  # rows/s committed by emit()
    rate: float
    seconds: float
    committed: int
    p50: float
    p95: float
    p99: float
    max: float


def render(r: OutboxResults) -> str:
    runs = ", ".join(whole(v) for v in r.relay_runs)
    relay = f"**{whole(r.relay)} rows/s** (median; runs: {runs})"
    lags = f"{r.p50:.1f} / {r.p95:.1f} / **{r.p99:.1f}** / {r.max:.1f} ms"
    return f"""{OUTBOX.begin}
## Transactional outbox

{OUTBOX_SUITE.generated(r.began, r.ended, r.command)}, on {r.cpus} CPUs: {r.database} for the outbox
table, a private {r.valkey} (no persistence).
Do not edit by hand: rerun it. See [the outbox](outbox.md) for what is measured.

| measure | result |
| --- | --- |
| relay throughput (`Relay.run_once`, batches of {r.batch}) | {relay} |
| ceiling: plain pipelined XADD of the same envelopes | {whole(r.ceiling)} envelopes/s |
| relay / ceiling | {r.relay / r.ceiling:.0%} |
| `emit()` into the table (transactions of {r.txn_rows} rows) | {whole(r.emit)} rows/s |
| commit to XADD, p50 / p95 / **p99** / max | {lags} |

- **Throughput**: each run emits {whole(r.rows)} rows first (committed in transactions of
  {r.txn_rows}), then times `Relay.run_once` in a loop until none is left: select with
  `FOR UPDATE SKIP LOCKED`, one pipelined XADD round trip per batch, mark sent, commit. The
  ceiling XADDs the same envelopes (already built) in pipelines of {r.batch}, with no database.
  Runs are listed in order; each finds the earlier runs' sent rows still in the table (they
  are kept, see [housekeeping](outbox.md#housekeeping)), with no VACUUM in between.
- **Latency**: a `manage.py relay` subprocess runs while this process commits
  {whole(r.committed)} one-row transactions at {r.rate:g}/s for {r.seconds:g} s. Each row's
  latency is its stream entry id's millisecond timestamp (the server's clock at XADD) minus
  the time taken right after its COMMIT returned: 1 ms resolution, same machine clock. The
  idle relay waits with {r.waits}.

{REPRODUCE}
{OUTBOX.end}
"""


REPRODUCE = OUTBOX_SUITE.rerun(
    "",
    [
        ("--quick", "smoke run, report to a temp file"),
        ("--sqlite", "SQLite even when PostgreSQL answers"),
    ],
)


def summary(r: OutboxResults) -> str:
    return (
        f"outbox ({r.database}): relay {whole(r.relay)} rows/s, ceiling {whole(r.ceiling)}/s "
        f"({r.relay / r.ceiling:.0%}); commit->XADD p50 {r.p50:.1f} p99 {r.p99:.1f} "
        f"max {r.max:.1f} ms"
    )
