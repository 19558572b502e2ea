"""``AgentRun`` rows: the database half of the idempotency gate.

One row per event hash, written once per attempt outcome with an upsert (a batch's rows in
one statement on PostgreSQL, one ``executemany`` on SQLite):

- a **commit** lands only if the row is not already ``succeeded`` and its ``fence`` is
  empty or names this attempt's lease;
- an attempt that **took over** an expired lease first sets ``fence`` to its own lease,
  so the worker it replaced (paused, not dead) can no longer commit;
- a **dead-lettering** (by a worker or an operator) fences out every attempt of the entry
  it dead-lettered: one that started before and wakes up late writes nothing;
- before an agent starts, a read finds events that already **succeeded**, so a lost
  Redis record never makes an agent run twice.

The common path is one read and one write per batch; the SQL is portable between SQLite
(>= 3.24) and PostgreSQL, and values go through the model fields' own adapters.
"""

from __future__ import annotations

import sqlite3
from contextlib import AbstractContextManager
from typing import Any

import redis
from django.db import (
    InterfaceError,
    InternalError,
    OperationalError,
    ProgrammingError,
    connection,
    transaction,
)
from django.utils import timezone

from workers.core.errors import EventDecodeError
from workers.core.events import decode_envelope, event_hash
from workers.core.fanout import run_hash
from workers.core.keys import EVENT_FIELD
from workers.core.records import Finish, Run, StepWrite, Usage
from workers.core.steps import Kind, StepRecord
from workers.core.storable import storable_text
from workers.models import AgentRun, RunStatus
from workers.store import durable_steps, timeline_rows
from workers.store.sql import (
    CHUNK_ROWS,
    Adapters,
    adapters,
    as_columns,
    dropping_broken_connection,
    is_postgresql,
    placeholders,
    raw_cursor,
    unnest_rows,
)

TABLE = AgentRun._meta.db_table
COLUMNS = (
    "event_hash", "event_type", "event_id", "source", "subject", "stream", "entry_id",
    "status", "attempts", "deliveries", "lease", "fence", "consumer", "created_at", "started_at",
    "finished_at", "duration_ms", "result", "error",
    "llm_calls", "prompt_tokens", "completion_tokens", "cost_usd", "version",
    "agent", "event_key", "replay_of",
)  # fmt: skip
# A run's usage only grows (each attempt reports every stored step's): a row written
# without any (a dead-lettering, a fence) keeps what an earlier attempt stored.
USAGE = ("llm_calls", "prompt_tokens", "completion_tokens", "cost_usd")
UPDATED = [c for c in COLUMNS if c not in ("event_hash", "created_at")]
KEPT = ("version", "agent", "event_key", "replay_of")
SUCCEEDED = RunStatus.SUCCEEDED.value
DEAD = RunStatus.DEAD.value
CANCELLED = RunStatus.CANCELLED.value
# Rows no attempt writes over, and whose events a read finds done (never started again).
FINAL = (SUCCEEDED, CANCELLED)
TRANSIENT_ERRORS = (OperationalError, InterfaceError, InternalError, ProgrammingError)


def upsert_sql(fenced: bool, batch: bool = False) -> str:
    """One row's INSERT ... ON CONFLICT DO UPDATE that never overwrites a success; with
    ``batch`` (PostgreSQL only), every row of a batch in one statement, from arrays.

    ``fenced``: the update also needs the row's fence to be empty or this row's lease.
    """
    row = f"({', '.join(['%s'] * len(COLUMNS))})"
    rows = unnest_rows(TABLE, COLUMNS) if batch else f"VALUES {row}"
    bigger = "GREATEST" if connection.vendor == "postgresql" else "MAX"
    sets = [
        f"{c} = {bigger}({TABLE}.{c}, excluded.{c})" if c in USAGE else f"{c} = excluded.{c}"
        for c in UPDATED
        if c not in KEPT
    ]
    # A row written without these (a dead-lettering by hand) keeps the ones it had.
    sets += [f"{c} = COALESCE(NULLIF(excluded.{c}, ''), {TABLE}.{c})" for c in KEPT]
    guard = f"{TABLE}.status NOT IN ('{SUCCEEDED}', '{CANCELLED}') AND NOT {dead_entry_fence()}"
    if fenced:
        guard += f" AND ({TABLE}.fence = '' OR {TABLE}.fence = excluded.lease)"
    return (
        f"INSERT INTO {TABLE} ({', '.join(COLUMNS)}) {rows} "
        f"ON CONFLICT (event_hash) DO UPDATE SET "
        f"{', '.join(sets)} WHERE {guard}"
    )


def dead_entry_fence() -> str:
    """True where the row was dead-lettered from the very entry this write's attempt holds:
    that entry is acked and gone, so the attempt started before the dead-lettering (a frozen
    worker waking up, one that read the entry just before an operator moved it). Its late
    result or failure is refused (fenced), or the event would be both succeeded and a dead
    letter. An attempt from another entry (a redrive, a new copy) writes as usual."""
    return (
        f"({TABLE}.status = '{DEAD}' AND {TABLE}.stream = excluded.stream "
        f"AND {TABLE}.entry_id = excluded.entry_id)"
    )


def succeeded(hashes: list[str], final: tuple[str, ...] = (SUCCEEDED,)) -> list[tuple[str, str]]:
    """``(event_hash, lease)`` of the succeeded rows (those ``final``) among ``hashes``. The
    status is checked here, not in SQL: given ``status = ...`` SQLite prefers the status
    index and scans every succeeded row instead of looking the hashes up in the unique
    index."""
    found: list[tuple[str, str, str]] = []
    with raw_cursor() as cursor:
        if is_postgresql():  # one statement, the same text for any number of hashes
            found = cursor.execute(ANY_SQL, [hashes]).fetchall()
        else:
            for i in range(0, len(hashes), CHUNK_ROWS):
                chunk = hashes[i : i + CHUNK_ROWS]
                cursor.execute(placeholders(_select_sql(len(chunk))), chunk)
                found += cursor.fetchall()
    return [(h, lease) for h, lease, status in found if status in final]


def _select_sql(n: int) -> str:
    marks = ", ".join(["%s"] * n)
    return f"SELECT event_hash, lease, status FROM {TABLE} WHERE event_hash IN ({marks})"


ANY_SQL = f"SELECT event_hash, lease, status FROM {TABLE} WHERE event_hash = ANY(%b)"


class SqliteQuickLookup:
    """``done_among`` for a few hashes, called on the event loop's own thread: for a SQLite
    file, a lookup in the unique index takes microseconds, while a hop to the read thread
    and back costs two thread wake-ups (hundreds of microseconds on a virtual machine) on
    every agent's way to its start. In WAL mode a reader never waits for the writer.

    Its own connection, outside Django (whose connections refuse an event loop's thread),
    and read-only (``query_only``)."""

    def __init__(self, path: str) -> None:
        self.path = path
        self._conn: sqlite3.Connection | None = None

    def __call__(self, hashes: list[str]) -> set[str]:
        if self._conn is None:
            self._conn = sqlite3.connect(self.path, timeout=5.0, isolation_level=None)
            self._conn.execute("PRAGMA query_only = 1")
        rows = self._conn.execute(_select_sql(len(hashes)).replace("%s", "?"), hashes)
        return {h for h, _, status in rows if status in FINAL}

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None


def _values(
    run: Run, status: str, fence: str, now: Any, finish: Finish | None, adapt: Adapters
) -> list[Any]:
    usage = finish.usage if finish else Usage()
    return [
        run.event_hash, run.event_type, run.event_id, run.source, run.subject, run.stream,
        run.entry_id, status, run.token, run.deliveries, run.lease, fence, run.consumer, now,
        adapt.time(run.started_at), now if finish else None,
        finish.duration_ms if finish else None,
        adapt.json(finish.result if finish else None),
        storable_text(finish.error) if finish else "",
        usage.calls, usage.prompt_tokens, usage.completion_tokens, usage.cost_usd, run.version,
        run.agent, run.event_key, run.replay_of,
    ]  # fmt: skip


class DjangoRunStore:
    """The Django implementation of the engine's run store.

    Methods are synchronous and open no transaction of their own: the engine's ``DbWriter``
    runs them in its database thread inside ``atomic()``, several at a time.
    """

    def atomic(self) -> AbstractContextManager[Any]:
        return transaction.atomic()

    def close(self) -> None:
        """Close this thread's connection (the engine calls it from its database thread)."""
        connection.close()

    @staticmethod
    def transient(exc: BaseException) -> bool:
        """True for an error that waiting can cure: a lost connection, a lock, a timeout, a
        serialization failure or deadlock (``OperationalError``), and a missing table or an
        aborted transaction (a deployment in progress, never a fault of the row). Anything
        else (``DataError``, ``IntegrityError``, a value no adapter takes) is the row's."""
        # The hot path's raw cursors raise the driver's own (PEP 249) errors.
        db: Any = getattr(connection, "Database")  # noqa: B009 (untyped in django-stubs)
        raw = (db.OperationalError, db.InterfaceError, db.InternalError, db.ProgrammingError)
        return isinstance(exc, TRANSIENT_ERRORS + raw)

    def done_among(self, hashes: list[str]) -> set[str]:
        """Before agents start: which of these events already succeeded, or were
        cancelled (duplicates: never started again)."""
        return {h for h, _ in succeeded(hashes, FINAL)} if hashes else set()

    def quick_lookup(self) -> SqliteQuickLookup | None:
        """A ``done_among`` the event loop may call itself: for a SQLite file, else None."""
        name = str(connection.settings_dict["NAME"])
        if connection.vendor != "sqlite" or name == ":memory:" or name.startswith("file:"):
            return None
        return SqliteQuickLookup(name)

    def fence(self, runs: list[Run]) -> None:
        """Runs that took over an expired lease: from now on only they may commit."""
        adapt = adapters()
        now = adapt.time(timezone.now())
        rows = [_values(r, RunStatus.RUNNING.value, r.lease, now, None, adapt) for r in runs]
        self._upsert(rows, fenced=False)

    def commit(self, finishes: list[Finish]) -> set[str]:
        """Store results unless fenced. Returns the leases that committed."""
        if not finishes:
            return set()
        adapt = adapters()
        now = adapt.time(timezone.now())
        rows = [_values(f.run, SUCCEEDED, "", now, f, adapt) for f in finishes]
        if self._upsert(rows, fenced=True) == len(finishes):
            return {f.run.lease for f in finishes}
        # Some were refused (or committed by an earlier try of this same batch): ask.
        committed = {lease for _, lease in succeeded([f.run.event_hash for f in finishes])}
        return {f.run.lease for f in finishes} & committed

    def fail(self, finishes: list[Finish]) -> None:
        """Record failed attempts (``dead`` ones as dead-lettered), unless fenced."""
        adapt = adapters()
        now = adapt.time(timezone.now())
        rows = [
            _values(f.run, RunStatus.DEAD if f.dead else RunStatus.FAILED, "", now, f, adapt)
            for f in finishes
        ]
        self._upsert(rows, fenced=True)

    def wait(self, finishes: list[Finish]) -> None:
        """Record runs that gave back their slot to wait, unless fenced."""
        adapt = adapters()
        now = adapt.time(timezone.now())
        rows = [_values(f.run, RunStatus.WAITING, "", now, f, adapt) for f in finishes]
        self._upsert(rows, fenced=True)

    def load_steps(self, hashes: list[str]) -> dict[str, dict[str, Any]]:
        """The stored durable steps of these events (``ctx.step``), on the read thread."""
        with dropping_broken_connection():
            return durable_steps.load_many(hashes)

    def save_steps(self, writes: list[StepWrite]) -> list[Any]:
        return durable_steps.save_many(writes)

    def record(self, steps: list[StepRecord]) -> None:
        """Timeline steps (see ``workers/store/timeline_rows.py``)."""
        timeline_rows.insert(steps)

    def mark_dead(self, finishes: list[Finish]) -> None:
        """Dead-lettered without a new attempt (their workers kept dying)."""
        adapt = adapters()
        now = adapt.time(timezone.now())
        rows = [_values(f.run, RunStatus.DEAD, "", now, f, adapt) for f in finishes]
        self._upsert(rows, fenced=False)

    @staticmethod
    def _upsert(rows: list[list[Any]], fenced: bool) -> int:
        """Rows changed. On PostgreSQL one statement for the batch, its rows in event-hash
        order (two workers' batches lock shared rows in the same order); on SQLite, and for
        a batch holding one hash twice (one statement may not update a row twice),
        ``executemany`` of the one-row statement: SQLite compiles it once and steps it."""
        if not rows:
            return 0
        if is_postgresql() and len({r[0] for r in rows}) == len(rows):
            with raw_cursor() as cursor:
                cursor.execute(upsert_sql(fenced, batch=True), as_columns(sorted(rows)))
                return int(cursor.rowcount)
        with raw_cursor() as cursor:
            cursor.executemany(placeholders(upsert_sql(fenced)), rows)
            return int(cursor.rowcount)


def close_dead_lettered_by_hand(
    client: redis.Redis,
    stream: str,
    entry_ids: list[str],
    detail: str,
    by: str = "",
    agent: str = "",
) -> None:
    """For entries an operator dead-lettered (their payloads are still in the stream: an
    XACK does not delete): ``dead_lettered`` steps, and in the same transaction their runs'
    rows closed as ``dead``, their consumer ``by`` (the operator). That is the fence: an
    attempt of such an entry that started before (a frozen worker waking up) can no longer
    commit (``dead_entry_fence``). It comes just after the move: a holder that commits in
    between wins, and the row stays ``succeeded`` beside the dead letter. ``agent``: whose
    runs (the group's agent, "" for the home group's): another agent's run of the same
    event is its own row and goes on."""
    runs = _runs_of_entries(client, stream, entry_ids, by, agent)
    if not runs:
        return
    now = timezone.now()
    steps = [
        StepRecord(run.event_hash, stream, run.entry_id, now, Kind.DEAD_LETTERED, "", 0, detail)
        for run in runs
    ]
    with transaction.atomic():
        timeline_rows.insert(steps)
        DjangoRunStore().mark_dead([Finish(run, None, error=detail, dead=True) for run in runs])


def _runs_of_entries(
    client: redis.Redis, stream: str, entry_ids: list[str], consumer: str, agent: str = ""
) -> list[Run]:
    """Agent ``agent``'s run record for each of these entries whose payload decodes (the
    others have no event hash, hence no run and no timeline): keyed by its run hash, with
    the event's own hash beside it, as the engine writes it (workers/core/fanout.py)."""
    with client.pipeline(transaction=False) as pipe:
        for entry_id in entry_ids:
            pipe.xrange(stream, min=entry_id, max=entry_id, count=1)
        replies = pipe.execute()
    runs: list[Run] = []
    for entry_id, reply in zip(entry_ids, replies, strict=True):
        try:
            envelope = decode_envelope(reply[0][1].get(EVENT_FIELD)) if reply else None
        except EventDecodeError:
            envelope = None
        if envelope is None:
            continue
        key = event_hash(envelope)
        run = Run(
            run_hash(key, agent), "", 0, consumer, envelope.type, envelope.id or "",
            envelope.source, envelope.subject or "", stream, entry_id, None,
            agent=agent, event_key=key,
        )  # fmt: skip
        runs.append(run)
    return runs
