"""The Runs page benchmark's data: N ``AgentRun`` rows, written by the database itself.

One ``INSERT ... SELECT`` over a generated series (a recursive CTE on SQLite,
``generate_series`` on PostgreSQL): a million rows in tens of seconds, where a million
Django objects through ``bulk_create`` take minutes. The shape, by the run's number ``i``:

* created every ``STEP_S`` seconds (a million runs span about a month), newest last;
* 20 event types, by ``(i / 100) % 20``: independent of the status, so every pair exists;
* status by ``i % 100``: 90% succeeded, 5% failed, 3% dead-lettered, 1% waiting, 1% cancelled;
* a subject in ``SUBJECTS`` (ten runs each);
* failed and dead runs carry a traceback ending in one of three exceptions.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from django.db import connection

START = datetime(2026, 11, 1, tzinfo=UTC)
STEP_S = 2.5
TYPES = 20
SUBJECTS = 100_000
TRACEBACK = 'Traceback (most recent call last):\n  File "agents.py", line 12, in handle\n'
COLUMNS = (
    "event_hash, event_type, event_id, source, subject, stream, entry_id, status, attempts, "
    "deliveries, lease, fence, consumer, created_at, duration_ms, error, llm_calls, "
    "prompt_tokens, completion_tokens, cost_usd, version"
)
# Shared by both dialects (``%%`` is a literal ``%``: Django's cursors take %s parameters).
# The microseconds are never 0: Django writes such a moment without its fraction on SQLite.
VALUES = """
    {hash}, 'bench.type-' || ((i / 100) %% {types}), '', 'bench', 'order/' || (i %% {subjects}),
    'streamdesk:events', i || '-0',
    CASE WHEN i %% 100 < 90 THEN 'succeeded' WHEN i %% 100 < 95 THEN 'failed'
         WHEN i %% 100 < 98 THEN 'dead' WHEN i %% 100 = 98 THEN 'waiting' ELSE 'cancelled' END,
    1 + (i %% 100 >= 90) * (i %% 5), 1, '', '', 'bench-host-1', {created}, (i %% 1000) + 0.5,
    CASE WHEN i %% 100 BETWEEN 90 AND 97 THEN %s ||
        CASE i %% 3 WHEN 0 THEN 'TimeoutError: upstream timed out after 30 s'
                    WHEN 1 THEN 'ValueError: card ' || i || ' declined'
                    ELSE 'KeyError: ''sku''' END
    ELSE '' END,
    1, i %% 2000, i %% 300, (i %% 2000) * 0.000001, 'v1'
"""
MICROS = "(1 + (i * 7919) %% 999999)"
SQLITE = f"""
INSERT INTO workers_agentrun ({COLUMNS})
WITH RECURSIVE seq(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM seq WHERE i < %s)
SELECT {
    VALUES.format(
        hash="printf('%%064x', i)",
        types=TYPES,
        subjects=SUBJECTS,
        created="strftime('%%Y-%%m-%%d %%H:%%M:%%S', %s + CAST(i * %s AS INTEGER), 'unixepoch')"
        f" || printf('.%%06d', {MICROS})",
    )
} FROM seq
"""
POSTGRES = f"""
INSERT INTO workers_agentrun ({COLUMNS})
SELECT {
    VALUES.format(
        hash="lpad(to_hex(i), 64, '0')",
        types=TYPES,
        subjects=SUBJECTS,
        created="to_timestamp(%s + floor(i * %s)) + " + MICROS + " * interval '1 microsecond'",
    ).replace("(i %% 100 >= 90)", "(i %% 100 >= 90)::int")
} FROM generate_series(1::bigint, %s) AS i
"""


@dataclass(frozen=True, slots=True)
class Inserted:
    rows: int
    seconds: float  # the INSERT, then ANALYZE on PostgreSQL

    def moment(self, i: int) -> datetime:
        """When run ``i`` (1 is the oldest) was created, to the second."""
        return START + timedelta(seconds=int(i * STEP_S))


def insert(rows: int) -> Inserted:
    """Write ``rows`` runs into the (empty, migrated) default database."""
    began = time.perf_counter()
    start_s = int(START.timestamp())
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute(POSTGRES, [start_s, STEP_S, TRACEBACK, rows])
            # What autovacuum does within a minute of a bulk load: the planner's statistics.
            cursor.execute("ANALYZE workers_agentrun")
        else:
            cursor.execute(SQLITE, [rows, start_s, STEP_S, TRACEBACK])
    return Inserted(rows, time.perf_counter() - began)
