"""The server and database a suite's run measures against: a private Valkey, and a
PostgreSQL database created for the run (or a SQLite file with ``--sqlite`` or when no local
PostgreSQL answers), with the environment the engine's settings read. Both go at the end."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import psycopg
import redis

from bench.common.harness import ROOT, Bench
from bench.common.machine import Machine, machine
from workers.redis.embedded import PrivateServer

PG_ADMIN = "host=127.0.0.1 port=5432 user=postgres dbname=postgres connect_timeout=2"


def postgres_version() -> str | None:
    """The server's version if 127.0.0.1:5432 takes a trust login as postgres, else None."""
    try:
        with psycopg.connect(PG_ADMIN, autocommit=True) as conn:
            row = conn.execute("SHOW server_version").fetchone()
    except psycopg.Error:
        return None
    return f"PostgreSQL {row[0].split()[0]}" if row else "PostgreSQL"


def pg_admin(sql: str) -> None:
    with psycopg.connect(PG_ADMIN, autocommit=True) as conn:
        conn.execute(sql)


def setup_django(env: dict[str, str]) -> None:
    """Configure Django in this process from ``env`` and migrate the run's database."""
    os.environ.update(env)
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", "--no-input", verbosity=0)


@dataclass(frozen=True, slots=True)
class Stack:
    tmp: Path  # the run's scratch directory, removed at the end
    server: PrivateServer
    client: redis.Redis
    env: dict[str, str]  # for this process (setup_django) and the suite's subprocesses
    postgres: str | None  # the server's version, None on SQLite


@contextmanager
def bench_stack(suite: str, *, sqlite: bool, demo: bool = True) -> Iterator[Stack]:
    """The run's stack for ``suite`` ("outbox", "runtime", "tracing"): its database is named
    after it (``streamdesk_bench_<suite>``), dropped and created again so a crashed run leaves
    no rows. ``demo``: the example apps and agents installed (``STREAMDESK_DEMO``)."""
    tmp = Path(tempfile.mkdtemp(prefix=f"streamdesk-bench-{suite}-"))
    pg = None if sqlite else postgres_version()
    pg_db = f"streamdesk_bench_{suite}"
    server = PrivateServer(tmp / "valkey").start()
    created = False
    try:
        client = redis.Redis.from_url(server.url, decode_responses=True, socket_timeout=30)
        if pg:
            pg_admin(f"DROP DATABASE IF EXISTS {pg_db} WITH (FORCE)")
            pg_admin(f"CREATE DATABASE {pg_db}")
            created = True
            db_url = f"postgres://postgres@127.0.0.1:5432/{pg_db}"
        else:
            db_url = f"sqlite:///{tmp / f'{suite}.sqlite3'}"
        env = {k: v for k, v in os.environ.items() if not k.startswith("STREAMDESK_")}
        env.update(
            DJANGO_SETTINGS_MODULE="console.settings",
            DATABASE_URL=db_url,
            REDIS_URL=server.url,
            STREAMDESK_DATA_DIR=str(tmp / "data"),
            DEBUG="0",  # as deployed: with DEBUG on, Django keeps every query in memory
            SECRET_KEY="bench-only-not-a-secret",
            LOG_LEVEL="WARNING",
            PYTHONUNBUFFERED="1",  # subprocesses' lines reach their logs as they are written
        )
        if demo:
            env["STREAMDESK_DEMO"] = "1"
        yield Stack(tmp, server, client, env, pg)
        from django.db import connections

        connections.close_all()  # before the database is dropped
        client.close()
    finally:
        server.stop()
        if created:
            pg_admin(f"DROP DATABASE IF EXISTS {pg_db} WITH (FORCE)")
        shutil.rmtree(tmp, ignore_errors=True)


def tree_description() -> str:
    """What this process imports: HEAD plus the working tree's changes (bench/common/source.py's
    wording, so console.report.code_under_test shortens it the same way)."""

    def git(*args: str) -> str:
        out = subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True, check=True)
        return out.stdout

    head = git("rev-parse", "--short", "HEAD").strip()
    status = git("status", "--porcelain", "-z", "--no-renames")
    changed = [
        name
        for name in status.split("\0")
        if name and not name[3:].startswith(("bench/", "docs/benchmarks.md"))
    ]
    if not changed:
        return f"{head} (working tree, clean)"
    names = ", ".join(f"`{name[3:]}`" for name in changed)
    return f"{head} plus the working tree's uncommitted changes: {names}"


@contextmanager
def in_process_stack(
    suite: str, *, sqlite: bool, demo: bool = True
) -> Iterator[tuple[Stack, Machine]]:
    """``bench_stack`` for a suite that drives the engine in this process (bench.runtime,
    bench.tracing): Django set up on the run's database, and the machine it runs on."""
    with bench_stack(suite, sqlite=sqlite, demo=demo) as stack:
        tmp = stack.tmp
        # Only machine() reads this Bench: its server and description of the code.
        bench = Bench(
            tmp, ROOT, tree_description(), stack.server, stack.client, tmp / "unused.sqlite3"
        )
        info = machine(bench)
        shown = stack.postgres or "SQLite"
        print(f"{suite} bench: {shown}, {info.valkey}, {info.cpus} CPUs", flush=True)
        setup_django(stack.env)
        yield stack, info
