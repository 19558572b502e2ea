"""Raw SQL plumbing shared by the engine's hot-path writes (runs, timeline).

The hot path bypasses the ORM: multi-row statements through the DB-API cursor, portable
between SQLite and PostgreSQL, values passed through Django's own adapters.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from django.db import connection

# Rows per statement: far under SQLite's 32766 bound variables.
CHUNK_ROWS = 500


def raw_cursor() -> Any:
    """The DB-API cursor, not Django's wrapper: with DEBUG on, the wrapper would keep the
    text of these long statements in its query log (megabytes) and render every parameter."""
    connection.ensure_connection()
    return connection.connection.cursor()


def placeholders(sql: str) -> str:
    return sql.replace("%s", "?") if connection.vendor == "sqlite" else sql


def db_time(value: datetime | None) -> Any:
    return None if value is None else connection.ops.adapt_datetimefield_value(value)


def insert_rows(table: str, columns: Sequence[str], rows: list[list[Any]]) -> None:
    """Plain multi-row INSERT: SQLite takes one long statement fastest; psycopg parses a
    long statement in Python on every call but pipelines ``executemany`` of a short one."""
    if not rows:
        return
    row = f"({', '.join(['%s'] * len(columns))})"
    head = f"INSERT INTO {table} ({', '.join(columns)}) VALUES "
    cursor = raw_cursor()
    try:
        if connection.vendor == "postgresql":
            cursor.executemany(head + row, rows)
            return
        for i in range(0, len(rows), CHUNK_ROWS):
            chunk = rows[i : i + CHUNK_ROWS]
            sql = placeholders(head + ", ".join([row] * len(chunk)))
            cursor.execute(sql, [v for r in chunk for v in r])
    finally:
        cursor.close()
