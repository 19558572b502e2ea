"""No tracked source file of the product or its tests is over 400 lines (issue 15: small
pieces a newcomer can read). Vendored code is not ours to split."""

from __future__ import annotations

import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
MAX_LINES = 400
SUFFIXES = (".py", ".html", ".js")
# The product (its engine, console, templates and static files) and its tests.
TREES = ("workers/", "console/", "templates/", "static/", "tests/", "manage.py")
VENDORED = "static/vendor/"


def tracked_sources() -> list[Path]:
    """Files git tracks: a scratch file or a half-written one in a working tree is not held."""
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--", *TREES],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return [
        ROOT / name
        for name in listed.split("\0")
        if name.endswith(SUFFIXES) and not name.startswith(VENDORED) and (ROOT / name).is_file()
    ]


def line_count(path: Path) -> int:
    with path.open("rb") as f:
        return sum(1 for _ in f)


def test_file_sizes_none_over_the_limit() -> None:
    over = {
        str(p.relative_to(ROOT)): n for p in tracked_sources() if (n := line_count(p)) > MAX_LINES
    }
    assert over == {}


def test_file_sizes_reads_the_product_and_its_tests() -> None:
    names = {str(p.relative_to(ROOT)) for p in tracked_sources()}
    assert {"workers/engine/worker.py", "console/urls.py", "tests/support/wait.py"} <= names
    assert not any(name.startswith(VENDORED) for name in names)
