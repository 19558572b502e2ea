"""The method notes and the rerun block of the engine benchmark's report (docs/benchmarks.md):
prose, kept apart from the code that renders the figures (``report.py``)."""

from __future__ import annotations

from bench.common.report import ENGINE

METHOD = """## How it is measured

* **Frozen code.** Every subprocess runs from a copy of the code taken when the run
  starts (the working tree, or `--ref`), so edits made during a run cannot mix versions.
* **Private everything.** `bench.engine` starts its own Valkey
  (`workers.redis.embedded.PrivateServer`, 127.0.0.1, a free port) and its own SQLite files in a
  temporary folder; the project's `.streamdesk/` is never touched. `manage.py migrate` runs once
  into a template database that each run copies.
* **PostgreSQL.** The local server (`$BENCH_POSTGRES_URL`, by default
  `postgres://postgres@127.0.0.1:5432/postgres`), when it answers within 3 s; otherwise the
  report says so and the PostgreSQL rows are left out. The bench migrates a template
  database of its own once and gives each run a copy (`CREATE DATABASE ... TEMPLATE`);
  every database it created is dropped at the end, after an error too. The server runs with
  its defaults, `synchronous_commit` on included (every commit waits for its WAL flush), as
  nobody tuned it for this; the worker and the floor connect over TCP on 127.0.0.1.
* **Throughput clock.** The parent polls progress every 5 ms (XINFO GROUPS `entries-read`
  and `pending` for the stream workers; the lowest pending id for the jobs table).
  The clock runs from the last poll at which nothing had been picked up to the first
  poll at which everything was finished, so interpreter and Django start-up, and the exit
  after the last event, count for no worker. Resolution: about 10 ms per run. After the
  exit, the run's database (SQLite file or PostgreSQL database) must hold one `succeeded`
  row per event.
* **CPU accounting** (`bench/engine/cpu.py`). At the clock's two moments the parent reads
  utime + stime (all threads, 10 ms ticks) from `/proc/<pid>/stat` of: the worker process
  and every process under it (`/proc/<pid>/task/*/children`: the supervisor and its
  children with `--processes`), the Valkey server (its `process_id` from INFO), and the
  backends serving the run's PostgreSQL database (their pids from `pg_stat_activity`,
  listed every 0.1 s before the drain and again at its end); its own CPU time comes from
  `getrusage(RUSAGE_SELF)`. A process that appears during the drain counts from zero.
  The machine's busy time (all CPUs: user, nice, system, irq, softirq, steal) comes from
  `/proc/stat`; what the parts did not use of it is "other processes" (PostgreSQL's shared
  background processes, such as its WAL writer, count there), and the rest is idle.
* **Baselines**, each its own process with the same Python (`bench/engine/baselines.py`,
  `bench/engine/floor.py`):
  * *raw*: a redis-py (hiredis) loop: `XREADGROUP COUNT 200`, then one `XACK` of the
    batch; nothing else. It is the ceiling one Python process can reach on this stream.
    For latency it uses `BLOCK 1000` and notes the time as soon as the read returns.
  * *floor*: the required per-event work with nothing else, described
    in section 1. Its gate keys are the engine's (`streamdesk:idem:<hash>`, runworker's
    default lease and TTL); its rows go to a fresh copy of the migrated database, with
    all of `workers_agentrun`'s indexes: through `sqlite3` (WAL, `synchronous=NORMAL`),
    or through psycopg on PostgreSQL (the batch in one `INSERT ... SELECT FROM unnest`
    statement of binary arrays, in autocommit: the statement is its own transaction).
    For latency (at the steady rate only) it waits on the stream until stopped, and its
    clock is the probe agent's (started after the gate), so its p99 shows how much of the
    distance to the raw loop the required work, above all the commit before the next
    read, already takes. Its one thread commits between reads, so on SQLite its p99 holds
    the WAL checkpoints that runworker's writer thread keeps off the pickup path: read its
    PostgreSQL row, where a commit is one round trip.
  * *naive*: the polling worker the article replaces. Jobs sit in a SQLite `jobs` table
    (WAL, `synchronous=NORMAL`, an index on `(status, id)`). Each poll selects a page of
    100 pending jobs, oldest first; each job is decoded, validated with the probe's
    pydantic schema, handled with the same `probe_result` as the agent, and marked done
    by its own `UPDATE`, committed at once (as `job.save()` in a loop does). An empty
    poll sleeps 1 s. For latency the benchmark INSERTs (and commits) each job on the
    same schedule as the XADDs.
* **Pacing.** One event per slot of `1/rate` s: the publisher sleeps until the slot, never
  sends ahead; a late slot is sent at once and counted as lateness (the tables show the
  rate achieved and the worst lateness: the publisher shares the two CPUs with the rest).
* **Memory.** `VmRSS` of the `runworker` process from `/proc/<pid>/status`, every second.
* **Never hangs.** Every wait has a deadline, every subprocess is killed in `finally`.

"""
REPRODUCE = ENGINE.rerun(
    " (about 10 minutes)",
    [
        ("--quick", "smoke run (under a minute), report to a temp file"),
        ("--ref HEAD", "a commit instead of the working tree"),
        ("--no-postgres", "SQLite only (PostgreSQL: $BENCH_POSTGRES_URL)"),
        (
            "--help",
            "--events, --repeats, --rate, --light-rate,\n"
            "--seconds, --memory-events, --processes,\n--output, --keep",
        ),
    ],
)
