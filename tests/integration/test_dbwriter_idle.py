"""The engine's database threads close their connections once unused for IDLE_CLOSE_S
(a worker at rest holds none), from a timer set on use, and open them again on the next use."""

from __future__ import annotations

import asyncio
import threading
from contextlib import AbstractContextManager, nullcontext
from typing import Any

import pytest

from workers.store import dbwriter
from workers.store.dbwriter import DbWriter


class Store:
    """Notes which thread closed its connection, and when a write or read ran."""

    def __init__(self) -> None:
        self.closed: list[str] = []

    def atomic(self) -> AbstractContextManager[Any]:
        return nullcontext()

    def close(self) -> None:
        self.closed.append(threading.current_thread().name.rsplit("_", 1)[0])


async def _use(db: DbWriter, store: Store) -> list[list[str]]:
    seen = []
    assert await db.call(lambda x: x + 1, 1) == 2
    assert await db.read(lambda x: x * 2, 2) == 4
    seen.append(list(store.closed))  # just used: nothing closed
    await asyncio.sleep(0.3)
    assert await db.call(lambda x: x, 0) == 0  # the writer used again, the reader not
    await asyncio.sleep(0.3)
    seen.append(sorted(store.closed))  # the reader idle 0.6 s, the writer 0.3 s
    await asyncio.sleep(0.6)
    seen.append(sorted(store.closed))  # both idle
    await asyncio.sleep(1.0)
    seen.append(sorted(store.closed))  # nothing used since: no second close
    await db.close()
    return seen


def test_each_database_thread_closes_its_connection_once_idle(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(dbwriter, "IDLE_CLOSE_S", 0.5)
    store = Store()
    db = DbWriter(store)
    seen = asyncio.run(_use(db, store))
    assert seen == [
        [],
        ["streamdesk-db-read"],
        ["streamdesk-db", "streamdesk-db-read"],
        ["streamdesk-db", "streamdesk-db-read"],
    ]
