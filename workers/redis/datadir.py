"""The local data folder (``.streamdesk/``): readable by its owner only.

It holds the SQLite file (with live session keys), the development ``SECRET_KEY`` and the
embedded Valkey's data, so the folder is 0700 and what is created in it 0600.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import secrets
import stat
import tempfile
from collections.abc import Iterator
from pathlib import Path

DIR_MODE = 0o700
FILE_MODE = 0o600
# For child processes that write into the folder (valkey-server): files 0600, folders 0700.
PRIVATE_UMASK = 0o077


def private_dir(path: Path) -> Path:
    """``path`` created if missing, and 0700 (a folder from an older version is tightened)."""
    path.mkdir(parents=True, exist_ok=True, mode=DIR_MODE)
    if stat.S_IMODE(path.stat().st_mode) != DIR_MODE:
        path.chmod(DIR_MODE)
    return path


def private_file(path: Path) -> Path:
    """``path`` created empty if missing (never truncated), and 0600.

    SQLite creates its ``-wal`` and ``-shm`` files with the database file's own mode, so a
    database file made here keeps those private too.
    """
    os.close(os.open(path, os.O_CREAT | os.O_WRONLY, FILE_MODE))
    if stat.S_IMODE(path.stat().st_mode) != FILE_MODE:
        path.chmod(FILE_MODE)
    return path


def stored_secret(path: Path, nbytes: int = 50) -> str:
    """The secret kept in ``path`` (0600), generated on first use.

    Written to a temporary file and linked into place, so two processes starting at once
    agree on one value and neither reads a half-written file.
    """
    private_dir(path.parent)
    if not path.exists():
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".secret-")  # mode 0600
        try:
            with os.fdopen(fd, "w") as handle:
                handle.write(secrets.token_urlsafe(nbytes))
            with contextlib.suppress(FileExistsError):
                os.link(tmp, path)
        finally:
            os.unlink(tmp)
    private_file(path)
    return path.read_text().strip()


@contextlib.contextmanager
def file_lock(path: Path) -> Iterator[None]:
    """Held by one process at a time (``flock`` on ``path``, a private file in a private
    folder): for a start or stop that two commands could run at once."""
    private_dir(path.parent)
    with open(private_file(path), "w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)
