"""Admitting a batch of deliveries: decode, gate and duplicate check at once, then start.

A mixin of the worker (``workers/engine/worker.py``), apart so the worker's file keeps to
its loop: the attributes below are the worker's.
"""

from __future__ import annotations

import asyncio
import logging
from collections import Counter
from collections.abc import Awaitable, Coroutine
from typing import TYPE_CHECKING, Any, TypeVar

from workers.core.config import EngineConfig
from workers.core.events import Envelope
from workers.core.registry import Registry
from workers.engine.attempts import Attempt, HashGroup, Settlement, exhausted, gate_groups
from workers.engine.intake import Rejected, sort_deliveries
from workers.engine.settle import Settler
from workers.gate import Gate
from workers.redis.bus import Delivery
from workers.store.dbwriter import DbWriter
from workers.store.protocols import DoneCheck, RunStore
from workers.waits import Answered, Arrival, Waits

log = logging.getLogger("streamdesk.worker")
T = TypeVar("T")


class AdmitsBatches:
    """``handle``: one batch from a read, a reclaim, a deferral or a hand-off."""

    config: EngineConfig
    registry: Registry
    store: RunStore
    gate: Gate
    db: DbWriter
    done_check: DoneCheck
    settler: Settler
    inflight: dict[str, Attempt]
    slot_freed: asyncio.Event
    admitting: set[asyncio.Task[Any]]
    waits: Waits
    on_cluster: bool
    # The home group's worker (workers/core/fanout.py): the stream's chores are its own.
    home: bool

    if TYPE_CHECKING:  # the worker's (worker.py)

        def _start(self, attempt: Attempt) -> None: ...

    async def handle(self, deliveries: list[Delivery]) -> None:
        c = self.config
        intake = sort_deliveries(
            deliveries, c.stream, self.registry, c.max_event_bytes, c.group, self.home
        )
        rejected = list(intake.rejected)
        groups: dict[str, HashGroup] = {}
        for runnable in intake.runnable:
            if (dead := exhausted(runnable, self.config)) is not None:
                rejected.append(dead)
            elif runnable.event.hash in self.inflight:
                self.inflight[runnable.event.hash].followers.append(runnable.delivery)
            elif runnable.event.hash in groups:
                groups[runnable.event.hash].followers.append(runnable.delivery)
            else:
                groups[runnable.event.hash] = HashGroup(runnable)
        leaders = list(groups.values())
        # The home group alone looks up the waits events answer: once per event.
        arrivals = intake.arrivals() if self.home else []
        odd = [e.type for _, e in intake.unclaimed]
        # The match shapes of the batch's types (which waits its events could answer) are
        # read in the gate's own call where one slot holds every key (not on a cluster).
        types = sorted({envelope.type for envelope, _, _ in arrivals})
        shapes = self.waits.shape_keys(types) if leaders and types and not self.on_cluster else []
        # The gate and the database's duplicate check do not depend on each other: both at
        # once, so an agent starts one round trip after its entry is read.
        gated, looked_up = await asyncio.gather(
            gate_groups(self.gate, self.config.consumer, leaders, shapes),
            self.done_check([g.leader.event.hash for g in leaders]),
            return_exceptions=True,
        )
        if isinstance(gated, BaseException):
            raise gated
        answering = (
            self._look_up_answers(arrivals, odd, gated.read if shapes else None)
            if arrivals
            else None
        )
        attempts, hits, busy, broken = gated.attempts, gated.hits, gated.busy, gated.broken
        if isinstance(looked_up, BaseException):
            await self._give_back(attempts)
            raise looked_up
        done = looked_up
        finished = [a for a in attempts if a.event_hash in done]
        for attempt in finished:
            # The database says these succeeded although Redis forgot: duplicates after all.
            hits += [attempt.delivery, *attempt.followers]
        attempts = [a for a in attempts if a.event_hash not in done]
        for attempt in attempts:
            attempt.answering = answering
            self.inflight[attempt.event_hash] = attempt  # later duplicates wait on it
        for attempt in attempts:
            if not attempt.takeover:
                self._start(attempt)
        takeovers = [a for a in attempts if a.takeover]
        rest = Settlement(rejected + broken, hits, intake.deleted, busy, passed=intake.passed)
        # The rest needs no hurry: the next batch is read meanwhile.
        self._follow(self._after_gate(takeovers, done, rest, intake.unclaimed, answering))

    def _look_up_answers(
        self, arrivals: list[Arrival], odd: list[str], read: list[list[Any] | None] | None
    ) -> asyncio.Task[Answered] | None:
        """The waits these events answer, looked up beside the agents, not before them: no
        entry of the batch is acked until it is done. None: the gate's read says no event
        can answer one (the common batch: no task, no command)."""
        if read is not None and Waits.nothing_to_answer(read, odd):
            return None
        task = self._follow(self.waits.answer_batch(arrivals, odd, read))
        # Retrieved here too: a batch whose duplicate check fails never awaits it.
        task.add_done_callback(lambda t: t.cancelled() or t.exception())
        return task

    def _follow(self, step: Coroutine[Any, Any, T]) -> asyncio.Task[T]:
        """A task of the admission's own: a burst run or a drain waits for it."""
        task = asyncio.ensure_future(step)
        self.admitting.add(task)
        task.add_done_callback(self.admitting.discard)
        return task

    async def _give_back(self, attempts: list[Attempt]) -> None:
        """Admission failed: release the leases; the entries stay pending for redelivery."""
        for attempt in attempts:
            self.inflight.pop(attempt.event_hash, None)
        self.slot_freed.set()
        await self._quietly(self.settler.release(attempts, "admission failed; left pending"))

    async def _after_gate(
        self,
        takeovers: list[Attempt],
        done: set[str],
        rest: Settlement,
        unclaimed: list[tuple[Rejected, Envelope]],
        answering: asyncio.Task[Answered] | None,
    ) -> None:
        """Fence and start the takeovers, then, once the batch's answers are looked up,
        settle what cannot run."""
        if takeovers:
            try:
                await self.db.call(self.store.fence, [a.run for a in takeovers])
            except Exception:
                log.exception(
                    "fencing %d takeovers failed; they will be redelivered", len(takeovers)
                )
                await self._give_back(takeovers)
                takeovers = []
            for attempt in takeovers:
                self._start(attempt)
        if done:
            await self._quietly(self.settler.mark_done(done))
        try:
            resumed = Answered() if answering is None else await answering
        except Exception as exc:
            log.warning(
                "looking up the waits a batch answers failed (%s); its entries stay pending", exc
            )
            return
        for reject, envelope in unclaimed:
            # No agent takes its type: dead-lettered, unless it is an answer to a wait (one
            # that came late or twice answers nothing, and is no trouble either).
            is_answer = envelope.type in resumed.awaited_types
            is_answer = is_answer or reject.delivery.entry_id in resumed.resumed
            (rest.answered if is_answer else rest.rejected).append(reject)
        if resumed.count:
            log.info("%d waiting run(s) answered: resumed", resumed.count)
            await self._quietly(self.settler.count(Counter(answers=resumed.count)))
        await self._quietly(
            self.settler.reject(
                rest.rejected, rest.hits, rest.deleted, rest.busy, rest.answered, rest.passed
            )
        )

    async def _quietly(self, step: Awaitable[object]) -> None:
        """Settling is retried by redelivery if it fails here: log, never crash the task."""
        try:
            await step
        except Exception:
            log.exception("settling a batch failed; its entries stay pending")
