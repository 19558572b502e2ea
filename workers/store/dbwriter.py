"""The worker's database access: grouped writes on one thread, reads on another.

Commits are the worker's most expensive step (an fsync each on PostgreSQL). One thread
owns the writing connection; whatever writes are queued while a transaction runs go into
the next one together, so under load a commit carries many batches and at low load
nothing waits. Reads sit on the agents' critical path (the duplicate check before a
start): they get a thread and connection of their own and never queue behind a commit.
Posted writes (the timeline) are awaited by nobody: those of one function queued meanwhile
become one call, in the next transaction.

A thread unused for ``IDLE_CLOSE_S`` closes its connection, so a worker at rest holds none
(the next use opens it again: a few milliseconds once per quiet spell). The close is a
timer set when the thread is used, not a periodic check: at rest nothing wakes.
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

# A database thread unused this long closes its connection.
IDLE_CLOSE_S = 10.0


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
        self._idle = {self._writer: _Idle(), self._reader: _Idle()}
        # The loops of one process share one writer (each ``join``s): their writes group
        # into one transaction, and one connection writes (two writers on one SQLite file
        # wait on each other's locks). The last to ``close`` closes it.
        self._users = 0

    def join(self) -> DbWriter:
        """One more loop writes through this writer; each calls ``close`` once."""
        self._users += 1
        return self

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
        try:
            return await asyncio.get_running_loop().run_in_executor(self._reader, fn, arg)
        finally:
            self._used(self._reader)

    def _used(self, executor: ThreadPoolExecutor) -> None:
        """Note a use of ``executor``'s connection; it closes once unused for a while."""
        idle = self._idle[executor]
        loop = asyncio.get_running_loop()
        idle.last_used = loop.time()
        if idle.timer is None:
            idle.timer = loop.call_later(IDLE_CLOSE_S, self._close_if_idle, executor)

    def _close_if_idle(self, executor: ThreadPoolExecutor) -> None:
        idle = self._idle[executor]
        loop = asyncio.get_running_loop()
        unused_s = loop.time() - idle.last_used
        writing = (
            executor is self._writer and self._drainer is not None and not self._drainer.done()
        )
        if writing or unused_s < IDLE_CLOSE_S:  # used since: look again when it may be idle
            idle.timer = loop.call_later(
                max(IDLE_CLOSE_S - unused_s, 0.1), self._close_if_idle, executor
            )
            return
        idle.timer = None
        # On its own thread (a connection belongs to the thread that opened it); a read or
        # write queued meanwhile runs after it and opens a new one.
        loop.run_in_executor(executor, self._close_quietly)

    def _close_quietly(self) -> None:
        try:
            self.store.close()
        except Exception as exc:  # a broken connection is closed all the same
            log.warning("closing an idle database connection failed: %s", exc)

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
        self._used(self._writer)

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
        """After the queued writes, posted ones included; a shared writer waits for its
        last user (the others' writes are flushed meanwhile)."""
        if self._drainer is not None:
            await asyncio.wait([self._drainer])
        self._users -= 1
        if self._users > 0:
            return
        loop = asyncio.get_running_loop()
        for executor, idle in self._idle.items():
            if idle.timer is not None:
                idle.timer.cancel()
            await loop.run_in_executor(executor, self.store.close)
            executor.shutdown(wait=True)


class _Idle:
    """When a database thread was last used, and its pending idle close."""

    __slots__ = ("last_used", "timer")

    def __init__(self) -> None:
        self.last_used = 0.0
        self.timer: asyncio.TimerHandle | None = None
