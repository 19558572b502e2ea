"""The gate's Lua files: each one loaded by a module, and no state or outcome outside the enums."""

from __future__ import annotations

import re
from pathlib import Path

import workers
from workers.gate import GateState, Outcome
from workers.gate.scripts import lua

WORKERS = Path(workers.__file__).parent
LUA_DIR = WORKERS / "gate" / "lua"
LOADED = re.compile(r"""\blua\(\s*["'](\w+)["']\s*\)""")
# A state written (``HSET key, 'state', 'x'``) or compared (``rec[1] == 'x'``, ``~= 'x'``).
STATE_WRITTEN = re.compile(r"'HSET',\s*[\w\[\]]+,\s*'state',\s*'(\w+)'")
STATE_READ = re.compile(r"rec\[1\]\s*[=~]=\s*'(\w+)'")
# What acquire reports: every quoted string on an ``outcome = ...`` line but a compared one.
OUTCOME_LINE = re.compile(r"^\s*outcome\s*=\s*(.+)$", re.M)
COMPARED = re.compile(r"[=~]=\s*'\w+'")
QUOTED = re.compile(r"'(\w+)'")
# Building a gate record's key: ``keys.gate(event_hash)``.
GATE_KEY = re.compile(r"\bkeys\.gate\(")


def lua_files() -> dict[str, str]:
    return {path.stem: path.read_text(encoding="utf-8") for path in sorted(LUA_DIR.glob("*.lua"))}


def loaded_names() -> set[str]:
    return {
        name
        for path in WORKERS.rglob("*.py")
        for name in LOADED.findall(path.read_text(encoding="utf-8"))
    }


def states_in(text: str) -> set[str]:
    return set(STATE_WRITTEN.findall(text)) | set(STATE_READ.findall(text))


def test_gate_scripts_every_lua_file_is_loaded_by_a_module() -> None:
    assert lua_files(), "no .lua files found"
    assert set(lua_files()) <= loaded_names()


def test_gate_scripts_every_loaded_name_has_its_file() -> None:
    assert loaded_names() <= set(lua_files())


def test_gate_scripts_write_and_compare_only_enum_states() -> None:
    for name, text in lua_files().items():
        assert states_in(text) <= set(GateState), name


def test_gate_scripts_use_every_enum_state() -> None:
    used = set().union(*(states_in(text) for text in lua_files().values()))
    assert used == set(GateState)


def test_gate_scripts_acquire_reports_exactly_the_outcomes() -> None:
    lines = OUTCOME_LINE.findall(lua_files()["acquire"])
    reported = {q for line in lines for q in QUOTED.findall(COMPARED.sub("", line))}
    assert reported == set(Outcome)


def test_gate_scripts_loader_drops_only_whole_line_comments() -> None:
    text = lua("dead_letter")
    assert not any(line.lstrip().startswith("--") for line in text.splitlines())
    assert "redis.call('XADD', dead" in text


def test_gate_records_touched_only_inside_the_gate_package() -> None:
    """Every read or write of a gate record goes through ``workers/gate/``: its key is built
    nowhere else in the product."""
    outside = {
        str(path)
        for root in (WORKERS, WORKERS.parent / "console")
        for path in root.rglob("*.py")
        if GATE_KEY.search(path.read_text(encoding="utf-8")) and LUA_DIR.parent not in path.parents
    }
    assert outside == set()
