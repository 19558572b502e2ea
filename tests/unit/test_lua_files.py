"""Every Lua script sits in ``lua/`` beside the module that loads it, and none is left inline."""

from __future__ import annotations

import re
from pathlib import Path

import console
import workers
from workers.core.lua import lua_script

ROOTS = (Path(workers.__file__).parent, Path(console.__file__).parent)
LOADED = re.compile(r"""\blua_script\(\s*__package__,\s*["'](\w+)["']\s*\)""")
# The gate loads through its own ``lua(name)`` (tests/unit/test_gate_scripts.py checks it).
GATE = Path(workers.__file__).parent / "gate"
# A script inline in Python: a string that calls into Redis.
INLINE = re.compile(r"redis\.call\(")


def lua_files() -> set[Path]:
    return {p for root in ROOTS for p in root.rglob("lua/*.lua") if p.parent.parent != GATE}


def loaded() -> set[Path]:
    return {
        path.parent / "lua" / f"{name}.lua"
        for root in ROOTS
        for path in root.rglob("*.py")
        for name in LOADED.findall(path.read_text(encoding="utf-8"))
    }


def test_lua_files_each_loaded_by_a_module_beside_it() -> None:
    assert lua_files(), "no .lua files found"
    assert lua_files() <= loaded()


def test_lua_files_each_loaded_name_has_its_file() -> None:
    assert {p for p in loaded() if not p.is_file()} == set()


def test_lua_files_no_script_inline_in_python() -> None:
    inline = {
        str(path.relative_to(root))
        for root in ROOTS
        for path in root.rglob("*.py")
        if INLINE.search(path.read_text(encoding="utf-8"))
    }
    assert not inline


def test_lua_files_loader_drops_only_whole_line_comments() -> None:
    text = lua_script("workers.operations", "retry_now")
    assert not any(line.lstrip().startswith("--") for line in text.splitlines())
    # A comment after code on the same line is Lua's business, not the loader's.
    assert "-- Redis >= 7 drops a deleted entry instead" in text
