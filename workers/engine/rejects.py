"""Settling what never ran, at once from the read path: dead-letter what cannot run, ack
duplicates and deleted entries, hold back a busy duplicate. A mixin of the settler
(``workers/engine/settle.py``), apart to keep that file to the settle pipeline.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Awaitable
from typing import TYPE_CHECKING, Any

from redis.asyncio.client import Pipeline

from workers.core.records import Finish
from workers.engine.intake import Rejected
from workers.engine.ports import UsesPorts
from workers.engine.settlement import Timing, plan_rejects
from workers.flow import Flow
from workers.redis import stats
from workers.redis.bus import Delivery
from workers.redis.deadletter import DeadLetter, queue_dead_letter
from workers.store.protocols import RunStore

log = logging.getLogger("streamdesk.worker")


class SettlesRejects(UsesPorts):
    store: RunStore
    timing: Timing
    flow: Flow | None

    async def acked(self, entry_ids: list[str]) -> None:
        """Tell flow control which entries left the pending list (``workers/flow``): the
        next entries of their keys may run."""
        if self.flow is not None and entry_ids:
            await self.flow.settled(entry_ids)

    if TYPE_CHECKING:  # the settler's (settle.py), which this mixin's methods call

        def _letter(self, delivery: Delivery, reason: str, error: str) -> DeadLetter: ...

        def _queue_wait(self, pipe: Pipeline, ids: list[Any], wait_ms: float) -> None: ...

        def _execute(self, pipe: Pipeline) -> Awaitable[list[Any]]: ...

        async def count(self, counts: Counter[str]) -> None: ...

    async def reject(
        self,
        rejected: list[Rejected],
        hits: list[Delivery],
        deleted: list[Delivery],
        busy: list[Delivery],
        answered: list[Rejected] | None = None,
        passed: list[Delivery] | None = None,
    ) -> None:
        """Dead-letter what cannot run, ack duplicates, deleted entries and the events no
        agent takes that answered a waiting run, count it all; ack another group's entries
        (``passed``) without counting them."""
        if answered:
            await self._ack_answers(answered)
        if passed:
            await self._ack_passed(passed)
        plan = plan_rejects(rejected, hits, busy, self.timing)
        self.timeline.read_outcomes(rejected, hits, busy)
        closing = [Finish(r.run, None, error=r.error, dead=True) for r in rejected if r.run]
        if closing:
            await self._close_dead(closing)
        if deleted:
            await self._ack_deleted(deleted)
            await self.acked([d.entry_id for d in deleted])
        if plan.empty:
            return
        c = self.config
        async with self.client.pipeline(transaction=False) as pipe:
            for r in plan.dead:
                log.warning(
                    "dead-lettering %s: %s",
                    r.delivery.entry_id,
                    r.error,
                    extra=r.log_fields(c.consumer),
                )
                queue_dead_letter(pipe, self._letter(r.delivery, r.reason, r.error))
            if plan.acks:
                pipe.xack(c.stream, c.group, *plan.acks)
            for recheck in plan.rechecks:
                # A busy entry waits for another live attempt of its event: that wait must
                # not count as a delivery (or a long agent's duplicates would be
                # dead-lettered), and it is looked at again once the holder's lease could
                # have run out, not a full idle time later.
                ids: list[Any] = [recheck.entry_id]
                pipe.xclaim(
                    c.stream, c.group, c.consumer, 0, ids, idle=recheck.idle_ms,
                    retrycount=recheck.retrycount, justid=True,
                )  # fmt: skip
                self._queue_wait(pipe, ids, recheck.due_ms)
            stats.queue_counts(pipe, self.keys, c.stream, plan.counts, c.group)
            await self._execute(pipe)
        await self.acked(plan.acks + [r.delivery.entry_id for r in plan.dead])

    async def _close_dead(self, closing: list[Finish]) -> None:
        """Their runs' rows as dead-lettered. Rows the database refuses for good are left as
        they are: the dead letters hold the record, and the entries must not stay pending."""
        try:
            await self.db.call(self.store.mark_dead, closing)
        except Exception as exc:
            if self.store.transient(exc):
                raise
            log.error("the database refused %d dead records: %s", len(closing), exc)

    async def _ack_answers(self, answered: list[Rejected]) -> None:
        """No agent takes their type, and none needs to: they answered waiting runs."""
        ids = [r.delivery.entry_id for r in answered]
        for r in answered:
            log.info("acked: it answered a waiting run", extra=r.log_fields(self.config.consumer))
        await self.client.xack(self.config.stream, self.config.group, *ids)
        await self.acked(ids)

    async def _ack_passed(self, passed: list[Delivery]) -> None:
        """Entries this group reads only to let by: another group's (workers/core/fanout.py)."""
        ids = [d.entry_id for d in passed]
        await self.client.xack(self.config.stream, self.config.group, *ids)
        await self.acked(ids)

    async def _ack_deleted(self, deleted: list[Delivery]) -> None:
        """Count what XACK really removed: XAUTOCLAIM may have dropped the same ids already
        (Redis 7 drops deleted entries whatever their idle time) and counted them."""
        ids = [d.entry_id for d in deleted]
        self.timeline.deleted(ids)
        acked = int(await self.client.xack(self.config.stream, self.config.group, *ids))
        await self.count(Counter(deleted=acked))
