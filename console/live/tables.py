"""Live tables: the group page's pending entries and retry queue, the dead-letters page.

These rows are not in the sampler's sample (it reads summaries, never entries), so they are
read per table, bounded: once per tick per table shown by this process's sockets, whatever
the number of tabs showing it, and only while one does. Each table is the first page of the
page's default view (no filter, no cursor), rendered once per role variant
(``console/table_rows.py`` reads and renders) and sent straight to the sockets that show it
(``console/consumers.py``); the browser merges the rows by id and keeps what the operator
ticked (``static/console/live.js``).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Coroutine, Iterable
from typing import Any, Protocol

from console.live import realtime

log = logging.getLogger("streamdesk.console")

TICK_S = 1.0
# Distinct tables a process reads a tick, whatever its sockets ask for (a page shows two).
MAX_TABLES = 100
# Reads and renders one live table (its name): the server's time and each role's variant,
# None when it cannot be shown. Called in a thread.
Read = Callable[[str], tuple[int, dict[bool, str]] | None]


class TableSink(Protocol):
    """A socket showing live tables: it picks the variant its role allows."""

    async def table_tick(self, name: str, variants: dict[bool, str], at_ms: int) -> None: ...


class LiveTables:
    """This process's live tables: which sockets show which table, and the loop that reads
    each shown table once a tick for all of them."""

    def __init__(self) -> None:
        self.sinks: dict[str, set[TableSink]] = {}
        self.task: asyncio.Task[None] | None = None

    def watch(self, sink: TableSink, names: frozenset[str]) -> None:
        self.forget(sink)
        for name in sorted(names):
            # Any signed-in viewer may name any table: a bound on what a tick reads.
            if realtime.is_table_key(name) and (name in self.sinks or len(self.sinks) < MAX_TABLES):
                self.sinks.setdefault(name, set()).add(sink)

    def forget(self, sink: TableSink) -> None:
        for name in list(self.sinks):
            self.sinks[name].discard(sink)
            if not self.sinks[name]:
                del self.sinks[name]

    def ensure_running(self, read: Read) -> None:
        """Start this process's loop on the running event loop, once."""
        loop = asyncio.get_running_loop()
        if self.task is not None and not self.task.done() and self.task.get_loop() is loop:
            return
        self.task = loop.create_task(self.run(read), name="console-live-tables")

    async def stop(self) -> None:
        task, self.task = self.task, None
        if task is not None and task.get_loop() is asyncio.get_running_loop():
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task

    async def tick(self, read: Read) -> int:
        """Read each shown table once and send it to every socket showing it; how many were
        read."""
        names = list(self.sinks)
        for name in names:
            try:
                found = await asyncio.to_thread(read, name)
            except Exception as exc:  # one table must never blank the others
                log.warning("console: live table %r cannot be shown: %s", name[:200], exc)
                continue
            if found is None:
                continue
            at_ms, variants = found
            await _send_all(
                sink.table_tick(name, variants, at_ms) for sink in list(self.sinks.get(name, ()))
            )
        return len(names)

    async def run(self, read: Read) -> None:
        loop = asyncio.get_running_loop()
        while True:
            started = loop.time()
            try:
                await self.tick(read)
            except Exception as exc:  # a Redis outage must not end the loop
                log.warning("console live tables tick failed: %s", exc)
            await asyncio.sleep(max(TICK_S - (loop.time() - started), 0.05))


async def _send_all(sends: Iterable[Coroutine[Any, Any, None]]) -> None:
    outcomes: list[Any] = await asyncio.gather(*sends, return_exceptions=True)
    for outcome in outcomes:
        if isinstance(outcome, Exception):  # a socket closing meanwhile: not the others'
            log.debug("console: a live table was not sent: %s", outcome)


# This process's one registry: the sockets of this process register here.
tables = LiveTables()
