"""The worker's database access: grouped writes on one thread, reads on another.

Commits are the worker's most expensive step (an fsync each on PostgreSQL). One thread
owns the writing connection; whatever writes are queued while a transaction runs go into
the next one together, so under load a commit carries many batches and at low load
nothing waits. Reads sit on the agents' critical path (the duplicate check before a
start): they get a thread and connection of their own and never queue behind a commit.
Posted writes (the timeline) are awaited by nobody: those of one function queued meanwhile
become one call, in the next transaction.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from contextlib import AbstractContextManager
from typing import Any, Protocol, TypeVar

T = TypeVar("T")
Write = tuple[Callable[[Any], Any], Any]

log = logging.getLogger("streamdesk.worker")


class Transactional(Protocol):
    def atomic(self) -> AbstractContextManager[Any]: ...
    def close(self) -> None: ...


class DbWriter:
    def __init__(self, store: Transactional) -> None:
        self.store = store
        self._writer = ThreadPoolExecutor(1, thread_name_prefix="streamdesk-db")
        self._reader = ThreadPoolExecutor(1, thread_name_prefix="streamdesk-db-read")
        self._pending: list[tuple[Write, asyncio.Future[Any]]] = []
        self._posted: dict[Callable[[list[Any]], Any], list[Any]] = {}
        self._drainer: asyncio.Task[None] | None = None

    async def call(self, fn: Callable[[Any], T], arg: Any) -> T:
        """A write: shares a transaction with the other writes queued meanwhile."""
        future: asyncio.Future[T] = asyncio.get_running_loop().create_future()
        self._pending.append(((fn, arg), future))
        self._kick()
        return await future

    def post(self, fn: Callable[[list[Any]], Any], items: list[Any]) -> None:
        """A write nobody waits for: ``fn(items)``, merged with the other posts to ``fn``
        queued meanwhile. A failure is logged, never raised."""
        self._posted.setdefault(fn, []).extend(items)
        self._kick()

    def _kick(self) -> None:
        if self._drainer is None or self._drainer.done():
            self._drainer = asyncio.get_running_loop().create_task(self._drain())

    async def read(self, fn: Callable[[Any], T], arg: Any) -> T:
        """A read, outside any transaction (it never holds SQLite's write lock)."""
        return await asyncio.get_running_loop().run_in_executor(self._reader, fn, arg)

    async def _drain(self) -> None:
        loop = asyncio.get_running_loop()
        while self._pending or self._posted:
            batch, self._pending = self._pending, []
            posted, self._posted = list(self._posted.items()), {}
            writes = [w for w, _ in batch] + posted
            outcomes = await loop.run_in_executor(self._writer, self._apply, writes)
            for (_, future), (ok, value) in zip(batch, outcomes[: len(batch)], strict=True):
                if future.done():
                    continue
                if ok:
                    future.set_result(value)
                else:
                    future.set_exception(value)
            for (fn, items), (ok, value) in zip(posted, outcomes[len(batch) :], strict=True):
                if not ok:
                    log.warning("%s of %d items failed: %s", fn.__name__, len(items), value)

    def _apply(self, writes: list[Write]) -> list[tuple[bool, Any]]:
        if len(writes) > 1:
            try:
                with self.store.atomic():
                    return [(True, fn(arg)) for fn, arg in writes]
            except Exception:
                pass  # one write failed and rolled the others back: redo each alone
        return [self._one(write) for write in writes]

    def _one(self, write: Write) -> tuple[bool, Any]:
        fn, arg = write
        try:
            with self.store.atomic():
                return (True, fn(arg))
        except Exception as exc:
            return (False, exc)

    async def close(self) -> None:
        """After the queued writes, posted ones included."""
        if self._drainer is not None:
            await asyncio.wait([self._drainer])
        loop = asyncio.get_running_loop()
        for executor in (self._writer, self._reader):
            await loop.run_in_executor(executor, self.store.close)
            executor.shutdown(wait=True)
