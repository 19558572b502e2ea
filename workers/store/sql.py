"""Raw SQL plumbing shared by the engine's hot-path writes (runs, timeline).

The hot path bypasses the ORM: multi-row statements through the DB-API cursor, portable
between SQLite and PostgreSQL, values passed through Django's own adapters.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator, Sequence
from contextlib import closing, contextmanager
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.conf import settings
from django.db import DatabaseError, DataError, IntegrityError, connection

from workers.core.storable import strict_json

# Rows per statement: far under SQLite's 32766 bound variables.
CHUNK_ROWS = 500


@contextmanager
def raw_cursor() -> Iterator[Any]:
    """The DB-API cursor, not Django's wrapper: with DEBUG on, the wrapper would keep the
    text of these long statements in its query log (megabytes) and render every parameter.
    Its errors are the driver's own; the connection's health is looked after all the same
    (``dropping_broken_connection``)."""
    connection.ensure_connection()
    with dropping_broken_connection(), closing(connection.connection.cursor()) as cursor:
        yield cursor


@contextmanager
def dropping_broken_connection() -> Iterator[None]:
    """Django checks a connection after an error only when a request starts or ends, and the
    worker serves no requests: a connection the server dropped (a restart, a failover) would
    fail every later call. So after a database error, Django's or the driver's, the
    connection is marked as Django's wrapper does and, outside a transaction, checked
    (``SELECT 1``) and closed if it no longer works: the next call opens a new one. Inside
    ``atomic()``, its failed rollback closes it (Django's own handling)."""
    try:
        yield
    except Exception as exc:
        db: Any = getattr(connection, "Database")  # noqa: B009 (untyped in django-stubs)
        if isinstance(exc, (DatabaseError, db.Error)):
            _after_error(exc, (DataError, IntegrityError, db.DataError, db.IntegrityError))
        raise


def _after_error(exc: Exception, row_errors: tuple[type[Exception], ...]) -> None:
    if isinstance(exc, row_errors):
        return  # the row's fault, never the connection's (as Django's wrapper decides)
    connection.errors_occurred = True
    if not connection.in_atomic_block:
        connection.close_if_unusable_or_obsolete()


def is_postgresql() -> bool:
    return connection.vendor == "postgresql"


@functools.cache
def column_types(table: str) -> dict[str, str]:
    """PostgreSQL's type name of each column (``varchar``, ``int4``, ``jsonb``...): the
    element type of the array each column's values are sent as."""
    with raw_cursor() as cursor:
        cursor.execute(
            "SELECT column_name, udt_name FROM information_schema.columns "
            "WHERE table_schema = current_schema() AND table_name = %s",
            [table],
        )
        return dict(cursor.fetchall())


def unnest_rows(table: str, columns: Sequence[str]) -> str:
    """``SELECT`` of a batch's rows from one array per column: one statement, one set of
    parameters and one plan for any number of rows (PostgreSQL only)."""
    types = column_types(table)
    # %b: each array in psycopg's binary format, four times cheaper to build than the text
    # one (measured: 1.8 against 7.0 ms for 200 rows of AgentRun, round trip included).
    arrays = ", ".join(f"%b::{types[c]}[]" for c in columns)
    return f"SELECT * FROM unnest({arrays})"


def as_columns(rows: list[list[Any]]) -> list[list[Any]]:
    """Rows turned into one list per column, as ``unnest_rows`` takes them."""
    return [list(column) for column in zip(*rows, strict=True)]


def placeholders(sql: str) -> str:
    return sql.replace("%s", "?") if connection.vendor == "sqlite" else sql


def db_time(value: datetime | None) -> Any:
    return None if value is None else connection.ops.adapt_datetimefield_value(value)


@dataclass(frozen=True, slots=True)
class Adapters:
    """Django's adapters of this thread's connection, looked up once per batch: going
    through ``connection`` (a thread-local proxy) for every value cost more than adapting."""

    time: Callable[[datetime | None], Any]
    json: Callable[[Any], Any]


def adapters() -> Adapters:
    return Adapters(time=_time_adapter(), json=_json_adapter())


def _json_adapter() -> Callable[[Any], Any]:
    """As ``JSONField.get_db_prep_save`` (None is SQL NULL), but strict: NaN or Infinity
    raise ``ValueError`` here, with a message that says so, instead of reaching a database
    that refuses them with a CHECK or parse error."""
    if connection.vendor == "postgresql":
        from psycopg.types.json import Jsonb

        return lambda value: None if value is None else Jsonb(value, dumps=strict_json)
    return lambda value: None if value is None else strict_json(value)


def _time_adapter() -> Callable[[datetime | None], Any]:
    adapt = connection.ops.adapt_datetimefield_value
    if connection.vendor != "sqlite" or not settings.USE_TZ:
        return lambda value: None if value is None else adapt(value)
    tz = connection.timezone

    def sqlite_time(value: datetime | None) -> str | None:
        # The same text as the SQLite backend's adapter (naive in the connection's zone).
        if value is None:
            return None
        if value.utcoffset() is not None:
            value = value.astimezone(tz).replace(tzinfo=None)
        return str(value)

    return sqlite_time


def insert_rows(table: str, columns: Sequence[str], rows: list[list[Any]]) -> None:
    """Plain multi-row INSERT: SQLite takes one long statement fastest, PostgreSQL one
    ``INSERT ... SELECT`` of arrays (``unnest_rows``)."""
    if not rows:
        return
    head = f"INSERT INTO {table} ({', '.join(columns)}) "
    if is_postgresql():
        with raw_cursor() as cursor:
            cursor.execute(head + unnest_rows(table, columns), as_columns(rows))
        return
    row = f"({', '.join(['%s'] * len(columns))})"
    head += "VALUES "
    with raw_cursor() as cursor:
        for i in range(0, len(rows), CHUNK_ROWS):
            chunk = rows[i : i + CHUNK_ROWS]
            sql = placeholders(head + ", ".join([row] * len(chunk)))
            cursor.execute(sql, [v for r in chunk for v in r])
