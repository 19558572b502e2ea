"""What the engine needs from its database: the run store, and durable steps through the
worker's database threads."""

from __future__ import annotations

from contextlib import AbstractContextManager
from typing import Any, Protocol

from workers.core.batcher import Batcher
from workers.core.records import Finish, Run, StepWrite
from workers.core.steps import StepRecord
from workers.store.dbwriter import DbWriter


class QuickLookup(Protocol):
    """``done_among`` cheap enough to call on the event loop (see ``workers/store/runs.py``)."""

    def __call__(self, hashes: list[str]) -> set[str]: ...
    def close(self) -> None: ...


class RunStore(Protocol):
    def atomic(self) -> AbstractContextManager[Any]: ...
    def transient(self, exc: BaseException) -> bool: ...
    def done_among(self, hashes: list[str]) -> set[str]: ...
    def quick_lookup(self) -> QuickLookup | None: ...
    def fence(self, runs: list[Run]) -> None: ...
    def commit(self, finishes: list[Finish]) -> set[str]: ...
    def fail(self, finishes: list[Finish]) -> None: ...
    def wait(self, finishes: list[Finish]) -> None: ...
    def mark_dead(self, finishes: list[Finish]) -> None: ...
    def record(self, steps: list[StepRecord]) -> None: ...
    def load_steps(self, hashes: list[str]) -> dict[str, dict[str, Any]]: ...
    def save_steps(self, writes: list[StepWrite]) -> list[Any]: ...
    def close(self) -> None: ...


class WorkerSteps:
    """Durable steps through the worker's database threads: loads on the read thread, saves
    in the grouped write transactions; each batched across the agents waiting at once."""

    def __init__(self, db: DbWriter, store: RunStore) -> None:
        self.db = db
        self.store = store
        self._loads: Batcher[str, dict[str, Any]] = Batcher(self._load_many)
        self._saves: Batcher[StepWrite, Any] = Batcher(self._save_many)

    async def load_steps(self, event_hash: str) -> dict[str, Any]:
        return await self._loads.submit(event_hash)

    async def save_step(self, write: StepWrite) -> Any:
        return await self._saves.submit(write)

    async def _load_many(self, hashes: list[str]) -> list[dict[str, Any]]:
        found = await self.db.read(self.store.load_steps, hashes)
        return [found[h] for h in hashes]

    async def _save_many(self, writes: list[StepWrite]) -> list[Any]:
        return await self.db.call(self.store.save_steps, writes)


class DoneCheck:
    """Which of these events already succeeded, asked before their agents start: on the
    event loop for a few hashes where the store has a quick lookup, else on the read thread
    (a big batch's lookup would hold the loop longer than the hop costs)."""

    QUICK_MAX = 16

    def __init__(self, db: DbWriter, store: RunStore) -> None:
        self.db = db
        self.store = store
        self.quick = store.quick_lookup()

    async def __call__(self, hashes: list[str]) -> set[str]:
        if not hashes:
            return set()
        if self.quick is not None and len(hashes) <= self.QUICK_MAX:
            return self.quick(hashes)
        return await self.db.read(self.store.done_among, hashes)

    def close(self) -> None:
        if self.quick is not None:
            self.quick.close()
