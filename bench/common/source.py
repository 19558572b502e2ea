"""A frozen copy of the code under test, so edits made during a run cannot mix versions.

A run takes minutes and starts many worker processes; each would import whatever is on
disk at its start. Every subprocess therefore runs from a snapshot taken once: the
working tree as it is (tracked and untracked, not ignored files), or a git ref. The
benchmark's own code (``bench/``) always comes from the working tree.
"""

from __future__ import annotations

import io
import shutil
import subprocess
import tarfile
from pathlib import Path

GIT_TIMEOUT_S = 60.0


def _git(root: Path, *args: str) -> bytes:
    out = subprocess.run(
        ["git", *args], cwd=root, capture_output=True, timeout=GIT_TIMEOUT_S, check=False
    )
    if out.returncode != 0:
        raise RuntimeError(f"git {' '.join(args)} failed: {out.stderr.decode().strip()}")
    return out.stdout


def _copy_bench(root: Path, dest: Path) -> None:
    shutil.rmtree(dest / "bench", ignore_errors=True)
    shutil.copytree(
        root / "bench", dest / "bench", ignore=shutil.ignore_patterns("__pycache__", "*.pyc")
    )


def snapshot(root: Path, dest: Path, ref: str | None) -> str:
    """Copy the code into ``dest``; returns what was copied, for the report."""
    dest.mkdir(parents=True)
    if ref is not None:
        commit = _git(root, "rev-parse", "--short", f"{ref}^{{commit}}").decode().strip()
        with tarfile.open(fileobj=io.BytesIO(_git(root, "archive", commit))) as archive:
            archive.extractall(dest, filter="data")
        _copy_bench(root, dest)
        return f"{commit} (`--ref {ref}`)"
    listed = _git(root, "ls-files", "-z", "--cached", "--others", "--exclude-standard")
    for name in filter(None, listed.decode().split("\0")):
        source = root / name
        if source.is_file():  # a deleted but still tracked file is skipped
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, dest / name)
    _copy_bench(root, dest)
    head = _git(root, "rev-parse", "--short", "HEAD").decode().strip()
    # Entries are "XY path"; --no-renames keeps each one a single path.
    status = _git(root, "status", "--porcelain", "-z", "--no-renames").decode()
    changed = [
        name
        for name in status.split("\0")
        if name and not name[3:].startswith(("bench/", "docs/benchmarks.md"))
    ]
    if not changed:
        return f"{head} (working tree, clean)"
    names = ", ".join(f"`{name[3:]}`" for name in changed)
    return f"{head} plus the working tree's uncommitted changes: {names}"
