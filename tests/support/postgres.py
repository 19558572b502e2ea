"""A private PostgreSQL server for tests that restart their database under a worker: never
the shared server (other test runs use it). Built with the installed server's own ``initdb``
and ``pg_ctl``, on a free loopback port, its data in a temporary folder. As root (CI) the
server runs as the ``postgres`` user, which PostgreSQL requires."""

from __future__ import annotations

import contextlib
import glob
import os
import pwd
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import psycopg

from tests.support.wait import wait_for
from workers.redis.embedded import free_port

DATABASE = "streamdesk"


def binaries() -> Path | None:
    """The newest installed server's ``bin`` folder, or None (no PostgreSQL server here)."""
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/pg_ctl"), key=_major)
    return Path(found[-1]).parent if found else None


def _major(path: str) -> int:
    return int(Path(path).parts[-3])


class PrivatePostgres:
    def __init__(self, folder: Path, bin_dir: Path) -> None:
        self.folder = folder
        self.bin_dir = bin_dir
        self.data = folder / "data"
        self.port = free_port()
        self.owner = "postgres" if os.geteuid() == 0 else ""

    @property
    def url(self) -> str:
        return f"postgres://postgres@127.0.0.1:{self.port}/{DATABASE}"

    def _run(self, tool: str, *args: str) -> None:
        argv = [str(self.bin_dir / tool), *args]
        if self.owner:
            argv = ["runuser", "-u", self.owner, "--", *argv]
        subprocess.run(argv, check=True, capture_output=True, timeout=60)

    def start(self) -> PrivatePostgres:
        if self.owner:
            entry = pwd.getpwnam(self.owner)
            os.chown(self.folder, entry.pw_uid, entry.pw_gid)
        self._run("initdb", "-D", str(self.data), "-U", "postgres", "--auth=trust", "-E", "UTF8")
        self._start()
        with self.connect("postgres") as conn:
            conn.execute(f"CREATE DATABASE {DATABASE}")
        return self

    def _ctl(self, action: str, *extra: str) -> None:
        # Sockets in the private folder: the default one (/var/run/postgresql) is the
        # shared server's.
        options = f"-p {self.port} -c listen_addresses=127.0.0.1 -k {self.folder} -c fsync=off"
        self._run("pg_ctl", action, "-D", str(self.data), "-w", "-o", options, *extra)

    def _start(self) -> None:
        # Its output to a file: a pipe would be held open by the server, and wait forever.
        self._ctl("start", "-l", str(self.folder / "server.log"))

    def restart(self) -> None:
        """Stop at once (every connection cut, as in a crash), then start again."""
        with self.down():
            pass

    @contextlib.contextmanager
    def down(self) -> Iterator[None]:
        """Stopped at once (as in a crash) for the ``with`` block, then started again."""
        self._ctl("stop", "-m", "immediate")
        try:
            yield
        finally:
            self._start()
            wait_for(self.accepts, what="the private PostgreSQL to accept connections")

    def accepts(self) -> bool:
        try:
            with self.connect():
                return True
        except psycopg.OperationalError:
            return False

    def connect(self, database: str = DATABASE) -> psycopg.Connection[tuple[object, ...]]:
        return psycopg.connect(
            host="127.0.0.1", port=self.port, user="postgres", dbname=database, autocommit=True
        )

    def stop(self) -> None:
        with contextlib.suppress(subprocess.SubprocessError):
            self._ctl("stop", "-m", "immediate")
        shutil.rmtree(self.folder, ignore_errors=True)


@contextlib.contextmanager
def private_postgres() -> Iterator[PrivatePostgres]:
    """A started private server, stopped and removed afterwards. The caller skips first
    when ``binaries()`` is None."""
    bin_dir = binaries()
    assert bin_dir is not None, "no PostgreSQL server installed"
    server = PrivatePostgres(Path(tempfile.mkdtemp(prefix="streamdesk-test-pg-")), bin_dir)
    try:
        yield server.start()
    finally:
        server.stop()
