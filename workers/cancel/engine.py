"""The worker's side of cancellation: learning of a request, stopping the agent, settling.

A cancelled attempt is settled here rather than by the settler (``workers/engine/settle.py``):
cancels are rare, so one database write and one pipeline each, and the settler's hot path
keeps no branch for them.
"""

from __future__ import annotations

import asyncio
import logging
from collections import Counter
from collections.abc import Awaitable, Callable, Coroutine, Mapping
from typing import TYPE_CHECKING, Any

from workers.cancel.requests import CancelRequest
from workers.core.records import Finish
from workers.core.steps import Kind, StepRecord, now
from workers.engine.ports import UsesPorts
from workers.redis import stats

if TYPE_CHECKING:
    from workers.engine.attempts import Attempt
    from workers.engine.outcomes import Settled
    from workers.engine.ports import Ports

log = logging.getLogger("streamdesk.worker")

RETRY_MAX_S = 5.0
# The gate record's fields a cancel request writes (workers/gate/lua/cancel.lua).
REQUEST_FIELDS = ["owner", "token", "cancel", "cancel_reason"]


class Cancels(UsesPorts):
    """Given the worker's ``inflight`` attempts (by event hash), ``on_finished(attempt)``,
    called once a cancelled attempt is settled (its slot is free again), and ``on_acked``,
    told the entry ids acked (as the settler tells it: flow control's release)."""

    def __init__(
        self,
        ports: Ports,
        *,
        inflight: Mapping[str, Attempt],
        on_finished: Callable[[Attempt], None],
        on_acked: Callable[[list[str]], Awaitable[None]] | None = None,
    ) -> None:
        super().__init__(ports)
        self.inflight = inflight
        self.on_finished = on_finished
        self.on_acked = on_acked
        self._tasks: set[asyncio.Task[None]] = set()

    # -- learning of a request ---------------------------------------------------------------

    async def catch_up(self) -> None:
        """Called by the process's listener (``workers/redis/listener.py``) once subscribed
        to ``keys.cancel_channel``: what was asked while not subscribed. On a cluster (no
        asyncio pub/sub in redis-py) nothing calls it: the lease renewal alone tells, a
        third of a lease on."""
        await self.check(list(self.inflight))

    async def heard(self, data: str) -> None:
        """A message on ``keys.cancel_channel``: an event hash, another worker's mostly."""
        if data in self.inflight:
            await self.check([data])

    def asked(self, attempts: list[Attempt]) -> None:
        """From the lease renewal: these attempts' gate records carry a cancel request."""
        if attempts:
            self._spawn(self._check_quietly([a.event_hash for a in attempts]))

    async def _check_quietly(self, hashes: list[str]) -> None:
        try:
            await self.check(hashes)
        except Exception as exc:  # the next renewal asks again
            log.warning("reading %d cancel requests failed: %s", len(hashes), exc)

    async def check(self, hashes: list[str]) -> None:
        """Read the gate records of these in-flight events; cancel those asked for, if the
        request is on this very attempt's lease (not an earlier owner's)."""
        attempts = [a for h in hashes if (a := self.inflight.get(h)) and a.cancel is None]
        if not attempts:
            return
        async with self.client.pipeline(transaction=False) as pipe:
            for attempt in attempts:
                pipe.hmget(self.gate.record(attempt.event_hash), REQUEST_FIELDS)
            replies: list[Any] = await pipe.execute()
        for attempt, (owner, token, by, reason) in zip(attempts, replies, strict=True):
            if by is not None and owner == attempt.owner and str(token) == str(attempt.token):
                self.cancel(attempt, CancelRequest(str(by), str(reason or "")))

    # -- stopping the agent ------------------------------------------------------------------

    def cancel(self, attempt: Attempt, request: CancelRequest) -> None:
        """Flag the attempt (``ctx.cancelled``); cancel an async agent's task. A sync agent's
        thread cannot be stopped: it runs on, holding its lease and slot, until it returns;
        the run ends cancelled whatever it returns or raises. An attempt whose agent has
        not started yet never starts it (``invoke``)."""
        if attempt.cancel is not None:
            return
        attempt.cancel = request
        log.info("cancelling the run: %s", request.detail, extra=attempt.log_fields())
        if attempt.ctx is None:
            return
        attempt.ctx.cancelled = True
        if attempt.runnable.spec.is_async and attempt.task is not None:
            attempt.task.cancel()

    # -- settling ----------------------------------------------------------------------------

    def settle(self, outcome: Settled) -> None:
        """The worker hands over every outcome of an attempt with a cancel request."""
        outcome.start_unwritten = self.timeline.take_start(outcome.attempt)
        self._spawn(self._settle(outcome))

    async def _settle(self, outcome: Settled) -> None:
        """The run row and its steps, then the gate record, the XACK and the counter; each
        retried through outages (both are idempotent). Then the slot is given back."""
        attempt = outcome.attempt
        request = attempt.cancel or CancelRequest("")
        finish = Finish(attempt.run, outcome.duration_ms, None, request.detail, usage=outcome.usage)
        steps = self._steps(outcome, request)
        from workers.store.cancelled import close_cancelled  # Django: once the database is in use

        await _until_done(
            "recording a cancelled run", lambda: self.db.call(close_cancelled, ([finish], steps))
        )
        await _until_done("settling a cancelled run", lambda: self._announce(attempt))
        if self.on_acked is not None:
            try:
                await self.on_acked(attempt.entry_ids)
            except Exception as exc:  # its owner looks again later (as after any ack)
                log.warning("telling of a cancelled run's ack failed: %s", exc)
        log.info("run cancelled: %s", request.detail, extra=attempt.log_fields())
        self.on_finished(attempt)

    def _steps(self, outcome: Settled, request: CancelRequest) -> list[StepRecord]:
        if not self.timeline.on:
            return []
        attempt = outcome.attempt
        steps = [self.timeline.ran_step(attempt)] if outcome.start_unwritten else []
        cancelled = self.timeline.step(attempt.delivery, Kind.CANCELLED, now(), request.detail)
        return [*steps, cancelled]

    async def _announce(self, attempt: Attempt) -> None:
        c = self.config
        async with self.client.pipeline(transaction=False) as pipe:
            self.gate.queue_cancelled(pipe, [attempt.event_hash])
            if not attempt.unanswered:  # else its redelivery looks up its answers again
                pipe.xack(c.stream, c.group, *attempt.entry_ids)
            stats.queue_counts(pipe, self.keys, c.stream, Counter(cancelled=1), c.group)
            await pipe.execute()

    def _spawn(self, step: Coroutine[Any, Any, None]) -> None:
        task = asyncio.get_running_loop().create_task(step)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)


async def _until_done(what: str, step: Callable[[], Awaitable[Any]]) -> None:
    delay = 0.1
    while True:
        try:
            await step()
            return
        except Exception as exc:
            log.warning("%s failed (%s); retrying in %.1f s", what, exc, delay)
        await asyncio.sleep(delay)
        delay = min(delay * 2, RETRY_MAX_S)
