"""The databases a benchmark run writes to: a SQLite file, or a database the bench creates
on a PostgreSQL server (``BENCH_POSTGRES_URL``, by default the local one) and drops at the
end; and what a run left in one (succeeded runs, their results)."""

from __future__ import annotations

import contextlib
import json
import os
import sqlite3
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

# The server a PostgreSQL run creates its databases on (its maintenance database's URL).
POSTGRES_URL_ENV = "BENCH_POSTGRES_URL"
DEFAULT_POSTGRES_URL = "postgres://postgres@127.0.0.1:5432/postgres"
POSTGRES_CONNECT_TIMEOUT_S = 3
SQLITE, POSTGRES = "sqlite", "postgres"  # a Bench's database kinds
KIND_NAMES = {SQLITE: "SQLite", POSTGRES: "PostgreSQL"}


@dataclass(frozen=True, slots=True)
class Database:
    """One run's database: a SQLite file (``path``) or a PostgreSQL database the bench made."""

    url: str  # DATABASE_URL, as the worker's settings read it
    path: Path | None = None

    @property
    def kind(self) -> str:
        return SQLITE if self.path is not None else POSTGRES

    @property
    def name(self) -> str:
        return urlsplit(self.url).path.lstrip("/")

    @contextlib.contextmanager
    def connect(self) -> Iterator[Any]:
        """A DB-API connection from this process (progress and results), closed after."""
        if self.path is not None:
            with contextlib.closing(sqlite3.connect(self.path, timeout=30)) as conn:
                yield conn
        else:
            import psycopg

            with psycopg.connect(self.url, autocommit=True) as pg:
                yield pg


def postgres_url() -> str:
    return os.environ.get(POSTGRES_URL_ENV) or DEFAULT_POSTGRES_URL


def server_address(url: str) -> str:
    """host:port of a database URL, without its user or password (for the report)."""
    return urlsplit(url).netloc.rpartition("@")[2] or "the default server"


def postgres_unreachable(url: str) -> str | None:
    """Why the PostgreSQL server at ``url`` cannot be used (None: it can)."""
    try:
        import psycopg
    except ImportError:
        return "psycopg is not installed"
    try:
        with psycopg.connect(url, connect_timeout=POSTGRES_CONNECT_TIMEOUT_S) as conn:
            conn.execute("SELECT 1")
    except psycopg.Error as exc:
        return f"{server_address(url)} not reachable ({str(exc).strip().splitlines()[0]})"
    return None


class PostgresServer:
    """The bench's databases on a PostgreSQL server: a migrated template (made once) and a
    copy of it per run (``CREATE DATABASE ... TEMPLATE``, fast). ``drop_all`` drops every
    database this object created, whatever happened in between."""

    def __init__(self, url: str) -> None:
        import psycopg

        self.url = url
        self.prefix = f"streamdesk_bench_{os.getpid()}_{os.urandom(3).hex()}"
        self.created: list[str] = []
        self.template = ""
        self.conn = psycopg.connect(url, autocommit=True)  # CREATE DATABASE needs autocommit
        row = self.conn.execute("SHOW server_version").fetchone()
        self.version = f"PostgreSQL {row[0].split()[0] if row else 'unknown'}"
        self.settings = self._settings("synchronous_commit", "fsync", "shared_buffers")

    def _settings(self, *names: str) -> str:
        shown = []
        for name in names:
            row = self.conn.execute(f"SHOW {name}").fetchone()
            shown.append(f"{name}={row[0] if row else '?'}")
        return ", ".join(shown)

    def url_of(self, name: str) -> str:
        return urlsplit(self.url)._replace(path=f"/{name}").geturl()

    def create(self, name: str, template: str | None = None) -> Database:
        from psycopg import sql

        full = f"{self.prefix}_{name}"
        statement = sql.SQL("CREATE DATABASE {}").format(sql.Identifier(full))
        if template:
            statement += sql.SQL(" TEMPLATE {}").format(sql.Identifier(template))
        self.created.append(full)  # before: a half-made database is dropped too
        self.conn.execute(statement)
        return Database(self.url_of(full))

    def backends(self, database: Database) -> list[int]:
        """The server processes of ``database``'s connections (pg_stat_activity)."""
        rows = self.conn.execute(
            "SELECT pid FROM pg_stat_activity WHERE datname = %s AND pid <> pg_backend_pid()",
            [database.name],
        ).fetchall()
        return [int(r[0]) for r in rows]

    def drop_all(self) -> list[str]:
        """Drop every database made here (closing their connections); the ones that failed."""
        import psycopg
        from psycopg import sql

        failed = []
        for name in reversed(self.created):
            try:
                self.conn.execute(
                    sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name))
                )
            except psycopg.Error:  # go on and drop the others; the caller reports these
                failed.append(name)
        self.created = failed
        self.conn.close()
        return failed


def succeeded_runs(db: Path | Database) -> int:
    db = db if isinstance(db, Database) else Database(f"sqlite:///{db}", db)
    with db.connect() as conn:
        row = conn.execute(
            "SELECT count(*) FROM workers_agentrun WHERE status = 'succeeded'"
        ).fetchone()
    return int(row[0])


def run_results(db: Database) -> list[dict[str, Any]]:
    """The stored result of every succeeded run (JSON text on SQLite, jsonb on PostgreSQL)."""
    with db.connect() as conn:
        rows = conn.execute(
            "SELECT result FROM workers_agentrun WHERE status = 'succeeded'"
        ).fetchall()
    return [r[0] if isinstance(r[0], dict) else json.loads(r[0]) for r in rows]
