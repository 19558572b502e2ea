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


Op = tuple[Callable[[Any], Any], Any, "asyncio.Future[Any]"]


class DbWriter:
    def __init__(self, store: Transactional) -> None:
        self.store = store
        self._executor = ThreadPoolExecutor(1, thread_name_prefix="streamdesk-db")
        self._pending: list[Op] = []
        self._drainer: asyncio.Task[None] | None = None

    async def call(self, fn: Callable[[Any], T], arg: Any) -> T:
        loop = asyncio.get_running_loop()
        future: asyncio.Future[T] = loop.create_future()
        self._pending.append((fn, arg, future))
        if self._drainer is None or self._drainer.done():
            self._drainer = loop.create_task(self._drain())
        return await future

    async def _drain(self) -> None:
        loop = asyncio.get_running_loop()
        while self._pending:
            ops, self._pending = self._pending, []
            outcomes = await loop.run_in_executor(
                self._executor, self._apply, [(fn, arg) for fn, arg, _ in ops]
            )
            for (_, _, future), (ok, value) in zip(ops, outcomes, strict=True):
                if future.done():
                    continue
                if ok:
                    future.set_result(value)
                else:
                    future.set_exception(value)

    def _apply(self, ops: list[tuple[Callable[[Any], Any], Any]]) -> list[tuple[bool, Any]]:
        if len(ops) == 1:
            return [self._one(ops[0])]
        try:
            with self.store.atomic():
                return [(True, fn(arg)) for fn, arg in ops]
        except Exception:
            # One operation failed and rolled the others back: redo each alone to isolate it.
            return [self._one(op) for op in ops]

    def _one(self, op: tuple[Callable[[Any], Any], Any]) -> tuple[bool, Any]:
        fn, arg = op
        try:
            with self.store.atomic():
                return (True, fn(arg))
        except Exception as exc:
            return (False, exc)

    async def close(self) -> None:
        loop = asyncio.get_running_loop()
        await loop.run_in_executor(self._executor, self.store.close)
        self._executor.shutdown(wait=True)
