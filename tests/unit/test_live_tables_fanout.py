"""A console process reads each live table once per tick, whatever the number of tabs
showing it, and only while one does (console/live/tables.py)."""

from __future__ import annotations

import asyncio
from collections import Counter

from console.live.realtime import DEAD_TABLE, PENDING_TABLE, table_key
from console.live.tables import MAX_TABLES, LiveTables

PENDING = table_key(PENDING_TABLE, "s", "g")
DEAD = table_key(DEAD_TABLE, "s")


class Tab:
    """A socket's side: what it was sent, in the variant its role picks."""

    def __init__(self, operate: bool) -> None:
        self.operate = operate
        self.got: list[tuple[str, str]] = []

    async def table_tick(self, name: str, variants: dict[bool, str], at_ms: int) -> None:
        self.got.append((name, variants[self.operate]))


class Broken(Tab):
    async def table_tick(self, name: str, variants: dict[bool, str], at_ms: int) -> None:
        raise ConnectionError("closed meanwhile")


def test_each_shown_table_is_read_once_per_tick_for_all_its_tabs() -> None:
    tables, reads = LiveTables(), Counter[str]()

    def read(name: str) -> tuple[int, dict[bool, str]]:
        reads[name] += 1
        return 1, {False: f"{name} plain", True: f"{name} buttons"}

    tabs = [Tab(False), Tab(True), Tab(True)]
    for tab in tabs:
        tables.watch(tab, frozenset({PENDING, "overview"}))
    tables.watch(tabs[2], frozenset({PENDING, DEAD}))  # a new subscription replaces the old
    assert asyncio.run(tables.tick(read)) == 2
    assert reads == Counter({PENDING: 1, DEAD: 1})
    assert tabs[0].got == [(PENDING, f"{PENDING} plain")]
    assert tabs[1].got == [(PENDING, f"{PENDING} buttons")]
    assert sorted(tabs[2].got) == sorted(
        [(PENDING, f"{PENDING} buttons"), (DEAD, f"{DEAD} buttons")]
    )


def test_a_table_no_tab_shows_is_not_read() -> None:
    tables, reads = LiveTables(), Counter[str]()
    tab = Tab(False)
    tables.watch(tab, frozenset({PENDING}))
    tables.forget(tab)

    def read(name: str) -> tuple[int, dict[bool, str]]:
        reads[name] += 1
        return 1, {False: "", True: ""}

    assert asyncio.run(tables.tick(read)) == 0 and not reads and not tables.sinks


def test_a_closing_socket_does_not_stop_the_others() -> None:
    tables = LiveTables()
    tab = Tab(False)
    tables.watch(Broken(False), frozenset({PENDING}))
    tables.watch(tab, frozenset({PENDING}))
    asyncio.run(tables.tick(lambda name: (1, {False: "rows", True: "rows"})))
    assert tab.got == [(PENDING, "rows")]


def test_a_table_that_cannot_be_read_does_not_stop_the_others() -> None:
    tables, tab = LiveTables(), Tab(False)
    tables.watch(tab, frozenset({PENDING, DEAD}))

    def read(name: str) -> tuple[int, dict[bool, str]]:
        if name == PENDING:
            raise RuntimeError("a template error")
        return 1, {False: "letters", True: "letters"}

    asyncio.run(tables.tick(read))
    assert tab.got == [(DEAD, "letters")]


def test_a_process_reads_at_most_max_tables_a_tick() -> None:
    tables, tab, late = LiveTables(), Tab(False), Tab(False)
    names = frozenset(table_key(DEAD_TABLE, f"s{n}") for n in range(MAX_TABLES + 5))
    tables.watch(tab, names)
    tables.watch(late, frozenset({PENDING, next(iter(tables.sinks))}))
    assert len(tables.sinks) == MAX_TABLES and PENDING not in tables.sinks
    assert any(late in sinks for sinks in tables.sinks.values())  # a table already read: shared
