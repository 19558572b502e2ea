"""Group commit: store operations from every part of the worker share transactions.

Database commits are the worker's most expensive step (an fsync each on PostgreSQL). One
thread owns the connection; whatever operations are queued while a transaction runs go
into the next one together, so under load a commit carries many batches and at low load
nothing waits.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from contextlib import AbstractContextManager
from typing import Any, Protocol, TypeVar

T = TypeVar("T")


class Transactional(Protocol):
    def atomic(self) -> AbstractContextManager[Any]: ...
    def close(self) -> None: ...


Op = tuple[Callable[[Any], Any], Any, bool, "asyncio.Future[Any]"]


class DbWriter:
    def __init__(self, store: Transactional) -> None:
        self.store = store
        self._executor = ThreadPoolExecutor(1, thread_name_prefix="streamdesk-db")
        self._pending: list[Op] = []
        self._drainer: asyncio.Task[None] | None = None

    async def call(self, fn: Callable[[Any], T], arg: Any) -> T:
        """A write: shares a transaction with the other writes queued meanwhile."""
        return await self._queue(fn, arg, write=True)

    async def read(self, fn: Callable[[Any], T], arg: Any) -> T:
        """A read: runs outside any transaction, so it never holds SQLite's write lock."""
        return await self._queue(fn, arg, write=False)

    async def _queue(self, fn: Callable[[Any], T], arg: Any, write: bool) -> T:
        loop = asyncio.get_running_loop()
        future: asyncio.Future[T] = loop.create_future()
        self._pending.append((fn, arg, write, future))
        if self._drainer is None or self._drainer.done():
            self._drainer = loop.create_task(self._drain())
        return await future

    async def _drain(self) -> None:
        loop = asyncio.get_running_loop()
        while self._pending:
            ops, self._pending = self._pending, []
            outcomes = await loop.run_in_executor(
                self._executor, self._apply, [(fn, arg, write) for fn, arg, write, _ in ops]
            )
            for (_, _, _, future), (ok, value) in zip(ops, outcomes, strict=True):
                if future.done():
                    continue
                if ok:
                    future.set_result(value)
                else:
                    future.set_exception(value)

    def _apply(self, ops: list[tuple[Callable[[Any], Any], Any, bool]]) -> list[tuple[bool, Any]]:
        outcomes: list[tuple[bool, Any] | None] = [None] * len(ops)
        for i, (fn, arg, write) in enumerate(ops):
            if not write:
                outcomes[i] = self._one(fn, arg, transactional=False)
        writes = [i for i, (_, _, write) in enumerate(ops) if write]
        if len(writes) > 1:
            try:
                with self.store.atomic():
                    for i in writes:
                        outcomes[i] = (True, ops[i][0](ops[i][1]))
                writes = []
            except Exception:
                pass  # one write failed and rolled the others back: redo each alone
        for i in writes:
            outcomes[i] = self._one(ops[i][0], ops[i][1], transactional=True)
        return [o if o is not None else (False, RuntimeError("not run")) for o in outcomes]

    def _one(self, fn: Callable[[Any], Any], arg: Any, transactional: bool) -> tuple[bool, Any]:
        try:
            if not transactional:
                return (True, fn(arg))
            with self.store.atomic():
                return (True, fn(arg))
        except Exception as exc:
            return (False, exc)

    async def close(self) -> None:
        loop = asyncio.get_running_loop()
        await loop.run_in_executor(self._executor, self.store.close)
        self._executor.shutdown(wait=True)
