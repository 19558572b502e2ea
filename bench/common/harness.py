"""The benchmark's private world: a Valkey server, databases, and worker subprocesses.

Nothing here touches the project's ``.streamdesk/`` folder: the server, the SQLite files
and every log live in one temporary directory, and traffic goes only to 127.0.0.1. A
PostgreSQL server is used when asked for and reachable (``BENCH_POSTGRES_URL``, by default
the local one): the bench creates its own databases there and drops every one at the end.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, cast

import redis

from bench.common.databases import (
    POSTGRES,
    SQLITE,
    Database,
    PostgresServer,
    postgres_unreachable,
    postgres_url,
)
from bench.common.source import snapshot
from workers.redis.embedded import PrivateServer

ROOT = Path(__file__).resolve().parents[2]  # bench/common/harness.py -> the project
PYTHON = sys.executable
STREAM = "streamdesk:events"  # runworker's default stream
WORKER_GROUP = "agents"  # runworker's default group
RAW_GROUP = "bench-raw"
FLOOR_GROUP = "bench-floor"
MIGRATE_TIMEOUT_S = 120.0
# Deployed settings: DEBUG off (settings.py then wants a SECRET_KEY; this one guards nothing).
PRODUCTION_ENV = {"DEBUG": "0", "SECRET_KEY": "bench-only-not-a-secret"}


class BenchError(RuntimeError):
    """A run that went wrong: the benchmark stops rather than report a bad number."""


# runworker reads no more entries than it has free agent slots (an agent worker must not
# hoard entries another worker could run), so --concurrency caps its batches: with 64 its
# reads held 64 events against the floor's 200. Both batch 200 here.
BATCH = "200"


def runworker_cmd(burst: bool, processes: int = 1) -> list[str]:
    cmd = [PYTHON, "manage.py", "runworker", "--concurrency", BATCH, "--batch-size", BATCH]
    if processes > 1:
        cmd += ["--processes", str(processes)]
    return [*cmd, "--burst"] if burst else cmd


def baseline_cmd(*args: str) -> list[str]:
    return [PYTHON, "-m", "bench.engine.baselines", *args]


def floor_cmd(*args: str) -> list[str]:
    return [PYTHON, "-m", "bench.engine.floor", *args]


def display(cmd: list[str]) -> str:
    """A command as a reader would type it from the project root."""
    shown = [".venv/bin/python" if c == PYTHON else c for c in cmd]
    return " ".join(shown)


@dataclass
class Bench:
    tmp: Path
    src: Path  # the snapshot every subprocess runs from (see source.py)
    source: str  # what the snapshot holds, for the report
    server: PrivateServer
    redis: redis.Redis
    template_db: Path
    postgres: PostgresServer | None = None  # with its migrated template, when in use
    postgres_skipped: str = ""  # why not, when it was asked for
    kind: str = SQLITE  # the database kind of ``database()``: see ``on``
    valkey_pid: int = 0  # the server's process, for its CPU time
    _runs: int = 0
    # Shared by the copies ``on`` makes, so every run's files get their own number.
    _numbers: Iterator[int] = field(default_factory=lambda: itertools.count(1))

    @property
    def url(self) -> str:
        return self.server.url

    @property
    def kinds(self) -> list[str]:
        """The database kinds this run measures: SQLite, and PostgreSQL when in use."""
        return [SQLITE, POSTGRES] if self.postgres is not None else [SQLITE]

    def on(self, kind: str) -> Bench:
        """This world, with ``database()`` giving ``kind``'s databases."""
        if kind == POSTGRES and self.postgres is None:
            raise BenchError("PostgreSQL is not in use in this run")
        return replace(self, kind=kind)

    def reset_redis(self) -> None:
        """Each run starts from an empty server: no stream, no gate keys, no groups."""
        self.redis.flushall()

    def next_run(self) -> None:
        """Number the next run: its files in the temp dir share that number."""
        self._runs = next(self._numbers)

    def fresh_db(self, name: str) -> Path:
        """A migrated, empty SQLite database for one run (a copy, so migrations run once)."""
        self.next_run()
        path = self.log_path(name).with_suffix(".sqlite3")
        with sqlite3.connect(self.template_db) as src, sqlite3.connect(path) as dst:
            src.backup(dst)  # safe even if the template still has a WAL file
        return path

    def database(self, name: str) -> Database:
        """A migrated, empty database of this bench's kind for one run."""
        if self.kind == SQLITE:
            path = self.fresh_db(name)
            return Database(f"sqlite:///{path}", path)
        assert self.postgres is not None
        self.next_run()
        tag = "".join(c if c.isalnum() else "_" for c in name)
        return self.postgres.create(f"{self._runs:02d}_{tag}", template=self.postgres.template)

    def env(self, db: Path | Database) -> dict[str, str]:
        # Drop the caller's STREAMDESK_* so a local setting cannot change the figures.
        env = {k: v for k, v in os.environ.items() if not k.startswith("STREAMDESK_")}
        env.update(
            REDIS_URL=self.url,
            DATABASE_URL=db.url if isinstance(db, Database) else f"sqlite:///{db}",
            STREAMDESK_DATA_DIR=str(self.tmp / "data"),
            STREAMDESK_AGENT_MODULES="bench.engine.agents",
            # What make run runs: development and demo mode (PRODUCTION_ENV turns DEBUG off).
            DEBUG="1",
            STREAMDESK_DEMO="1",
            PYTHONPATH=str(self.src),
            LOG_LEVEL="WARNING",
            PYTHONUNBUFFERED="1",
        )
        return env

    def log_path(self, name: str) -> Path:
        return self.tmp / f"{self._runs:02d}-{name.replace('/', '-')}.log"

    def migrate(self, db: Path | Database) -> None:
        result = subprocess.run(
            [PYTHON, "manage.py", "migrate", "--no-input", "-v0"],
            cwd=self.src,
            env=self.env(db),
            capture_output=True,
            text=True,
            timeout=MIGRATE_TIMEOUT_S,
            check=False,
        )
        if result.returncode != 0:
            raise BenchError(f"migrate failed: {result.stderr.strip()[-2000:]}")


@contextlib.contextmanager
def open_bench(
    keep: bool = False, ref: str | None = None, postgres: bool = False
) -> Iterator[Bench]:
    """The private world of one run; ``ref``: benchmark that git ref, not the working tree;
    ``postgres``: also a PostgreSQL template, if the server is reachable (else
    ``postgres_skipped`` says why)."""
    tmp = Path(tempfile.mkdtemp(prefix="streamdesk-bench-"))
    server: PrivateServer | None = None
    client: redis.Redis | None = None
    pg: PostgresServer | None = None
    try:
        src = tmp / "src"
        source = snapshot(ROOT, src, ref)
        server = PrivateServer(tmp / "valkey").start()
        client = redis.Redis.from_url(server.url, decode_responses=True, socket_timeout=30)
        template = tmp / "template.sqlite3"
        bench = Bench(tmp, src, source, server, client, template)
        bench.valkey_pid = int(cast(dict[str, Any], client.info("server"))["process_id"])
        bench.migrate(template)
        if postgres:
            url = postgres_url()
            bench.postgres_skipped = postgres_unreachable(url) or ""
            if not bench.postgres_skipped:
                pg = PostgresServer(url)
                made = pg.create("template")
                bench.migrate(made)
                pg.template = made.name
                bench.postgres = pg
        yield bench
    finally:
        if pg is not None:
            failed = pg.drop_all()
            if failed:
                print(f"could not drop PostgreSQL databases: {', '.join(failed)}", file=sys.stderr)
        if client is not None:
            client.close()
        if server is not None:
            server.stop()
        if keep:
            print(f"kept {tmp}", file=sys.stderr)
        else:
            shutil.rmtree(tmp, ignore_errors=True)


@contextlib.contextmanager
def spawn(
    cmd: list[str], env: dict[str, str], log: Path, cwd: Path
) -> Iterator[subprocess.Popen[bytes]]:
    """Run a subprocess with output to ``log``; it never outlives the block."""
    with open(log, "wb") as out:
        proc = subprocess.Popen(cmd, cwd=cwd, env=env, stdout=out, stderr=subprocess.STDOUT)
        try:
            yield proc
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait(timeout=10)


def log_tail(log: Path, limit: int = 2000) -> str:
    try:
        return log.read_text(errors="replace")[-limit:]
    except OSError:
        return ""


def wait_exit(proc: subprocess.Popen[bytes], log: Path, timeout_s: float) -> None:
    """Wait for a clean exit; anything else is an error that shows the log."""
    try:
        code = proc.wait(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        raise BenchError(
            f"{proc.args!r} did not exit within {timeout_s:.0f} s:\n{log_tail(log)}"
        ) from None
    if code != 0:
        raise BenchError(f"{proc.args!r} exited {code}:\n{log_tail(log)}")


def stop(proc: subprocess.Popen[bytes], log: Path, timeout_s: float = 45.0) -> None:
    """SIGTERM (workers drain and exit 0), then wait with a deadline."""
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
    wait_exit(proc, log, timeout_s)


def wait_until(
    check: Callable[[], object], what: str, timeout_s: float, interval_s: float = 0.01
) -> None:
    """Poll ``check()`` until true; a deadline, never a hang."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if check():
            return
        time.sleep(interval_s)
    raise BenchError(f"timed out after {timeout_s:.0f} s waiting for {what}")


def rss_kb(pid: int) -> int | None:
    """Resident set size from /proc (None once the process is gone)."""
    try:
        with open(f"/proc/{pid}/status") as status:
            for line in status:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except (OSError, ValueError):
        return None
    return None


# -- progress: how many events a worker has read and finished ------------------------------


def group_progress(client: redis.Redis, group: str) -> tuple[int, int]:
    """(entries read, entries acked) of one consumer group of the bench stream."""
    try:
        groups = cast(list[dict[str, Any]], client.xinfo_groups(STREAM))
    except redis.ResponseError:  # no stream yet
        return 0, 0
    for info in groups:
        if info["name"] == group:
            read = int(info.get("entries-read") or 0)
            return read, read - int(info["pending"])
    return 0, 0


def jobs_progress(conn: sqlite3.Connection, total: int) -> tuple[int, int]:
    """(started, done) of the naive jobs table: it works in id order, so the lowest pending
    id tells progress with one index probe, not a count over the table."""
    row = conn.execute("SELECT min(id) FROM jobs WHERE status = 'pending'").fetchone()
    done = total if row[0] is None else int(row[0]) - 1
    return done, done
