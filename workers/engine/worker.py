"""The worker: read -> gate -> run -> settle, with reclaim, leases and heartbeats beside it.

Round trips are per batch, never per event: one XREADGROUP, one gate pipeline beside one
database read (which events already succeeded), then, as agents finish, one database commit
and one settle pipeline (gate done + XACK + counters) for everything that finished together.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import redis
from redis.asyncio import Redis

from workers.cancel import Cancels
from workers.core.config import EngineConfig
from workers.core.registry import Registry
from workers.engine.admission import AdmitsBatches
from workers.engine.attempts import Attempt, answers_looked_up
from workers.engine.defer import Deferrals
from workers.engine.housekeeping import Housekeeper, Status
from workers.engine.invoke import cancelled, context_for, failed, invoke
from workers.engine.outcomes import succeeded
from workers.engine.pause import PauseWatch
from workers.engine.ports import Ports
from workers.engine.reading import read_new, recover_own_pending
from workers.engine.reclaim import Reclaimer
from workers.engine.settle import Settler
from workers.engine.slots import Slots
from workers.engine.sweep import SweepToken, chores_every_ms, take_turns
from workers.engine.timeline import Timeline
from workers.fanout import OwnReader
from workers.flow import Flow
from workers.gate import Gate
from workers.redis import bus
from workers.redis.bus import Delivery
from workers.redis.connection import UNREACHABLE, is_cluster, own_connection
from workers.redis.listener import Listener
from workers.runtime.context import Services
from workers.runtime.llm.config import LLMConfig
from workers.runtime.ratelimit import Budget, Limiter
from workers.store.dbwriter import DbWriter
from workers.store.protocols import DoneCheck, RunStore, WorkerSteps
from workers.waits import Waits

log = logging.getLogger("streamdesk.worker")

REDIS_DOWN = UNREACHABLE
MAX_BACKOFF_S = 5.0
# What the read loop looks up while the database is down, to learn that it answers again.
PROBE_HASH = "0" * 64


class Worker(AdmitsBatches):
    def __init__(
        self,
        config: EngineConfig,
        client: Redis,
        registry: Registry,
        store: RunStore,
        budgets: dict[str, Budget] | None = None,
        llm: LLMConfig | None = None,
        slots: Slots | None = None,
        listener: Listener | None = None,
        db: DbWriter | None = None,
    ) -> None:
        self.config = config
        self.client = client
        if registry.whole is registry and registry.named():
            registry = registry.home()  # named agents run in their own groups' workers
        self.registry = registry
        self.home = registry.runs_home
        self.chores_only = self.home and not any(True for _ in registry)
        self.store = store
        c = config
        self.gate = Gate(client, c.keys, c.lease_ms, c.done_ttl_s, c.stream, own_connection(client))
        self.reclaimer = Reclaimer(client, c.stream, c.group, c.consumer, c.claim_idle_ms)
        sweep_key = c.keys.sweep(c.stream, c.group)
        self.sweeper = SweepToken(
            client,
            sweep_key,
            c.stream,
            c.group,
            c.consumer,
            c.claim_idle_ms,
            c.reclaim_interval_ms,
            c.keys.waits(c.stream, c.group),
            chores_every_ms(c),
        )
        # Set to end the blocking read at once: on a stop, and when the group is paused.
        self.halt = asyncio.Event()
        self.pause = PauseWatch(
            client, c.keys, c.stream, c.group, lambda: len(self.inflight), self.halt
        )
        self.flow = Flow(client, c, registry, wake=self.halt)  # per-key order (workers/flow)
        # A named agent's group lets others' entries by in the server (workers/fanout); a
        # keyed one's read is flow control's script, which lets them by in Python.
        own = [s.type for s in registry] if not self.home and not self.flow.on else []
        self.own = OwnReader(client, c.stream, c.group, c.consumer, own[0]) if own else None
        self.held: list[Delivery] = []  # read while the group was paused: run on resume
        self.admission = asyncio.Lock()  # the read loop and the sweep each admit batches
        self.inflight: dict[str, Attempt] = {}
        self.stopping = asyncio.Event()
        self.slot_freed = asyncio.Event()
        # Agent slots: this worker's own, or its process's, shared by its partitions' loops.
        self.slots = slots or Slots(config.concurrency)
        self.slots.watch(self.slot_freed)
        self.admitting: set[asyncio.Task[Any]] = set()
        self.processed = 0
        self.started_ms = int(time.time() * 1000)
        # One thread owns the database connection; agents' sync code gets its own pool.
        self.db = (db or DbWriter(store)).join()  # the process's, shared by its loops
        self.done_check = DoneCheck(self.db, store)
        self.timeline = Timeline(config, functools.partial(self.db.post, store.record))
        self._agents = ThreadPoolExecutor(config.concurrency, thread_name_prefix="streamdesk-agent")
        # Runs that wait, and the events that answer them (workers/waits/: the one seam).
        self.waits = Waits(client, c.keys, c.stream, c.group, own_connection(client))
        self.on_cluster = is_cluster(client)
        self.services = Services(
            WorkerSteps(self.db, store),
            Limiter(client, budgets or {}, config.prefix),
            llm or LLMConfig(),
            self._agents,
            self.waits,
        )
        self.deferrals = Deferrals(client, c.stream, c.group, c.consumer, c.claim_idle_ms)
        p = Ports(config, client, self.gate, self.db, self.timeline)
        self.settler = Settler(
            p,
            store,
            on_deferred=self.deferrals.add,
            on_finished=self.finished,
            on_held=self.sweeper.soon,
            on_followers=self.readmit,
            flow=self.flow,
        )
        self.cancels = Cancels(
            p, inflight=self.inflight, on_finished=self.finished, on_acked=self.flow.settled
        )
        # The pause and cancel channels: this worker's own subscription, or its process's,
        # shared by its partitions' loops.
        self.listener = listener or Listener(client)
        self.listener.register(self.pause.channel, self.pause)
        self.listener.register(c.keys.cancel_channel, self.cancels)
        self.housekeeper = Housekeeper(
            p,
            on_cancel=self.cancels.asked,
            inflight=self.inflight,
            hold_deferrals=self.deferrals.hold,
            pause=self.pause,
            status=lambda: Status(self.started_ms, self.processed, self.stopping.is_set()),
        )
        self.store_down = False  # a read's database check failed: probe before reading again

    # -- lifecycle ---------------------------------------------------------------------------

    def request_stop(self) -> None:
        if not self.stopping.is_set():
            n, stream = len(self.inflight), self.config.stream
            log.info("stopping: no new reads of %s, draining %d in-flight", stream, n)
        self.stopping.set()
        self.halt.set()
        self.slot_freed.set()

    async def run(self) -> None:
        await bus.ensure_group(self.client, self.config.stream, self.config.group)
        background = [
            asyncio.create_task(self.settler.run(), name="settler"),
            *self.housekeeper.start(),
        ]
        self.listener.attend()
        try:
            await self._guarded(self.pause.read)
            await self._guarded(functools.partial(recover_own_pending, self))
            # Only then: a sweep beside that read would meet the same entries (and report a
            # deleted one twice).
            background.append(asyncio.create_task(take_turns(self), name="sweep"))
            while not self.stopping.is_set():
                if await self._guarded(self._tick) and self.config.burst:
                    break
        finally:
            await self._drain()
            await self.flow.give_back()
            # A burst run ends without a stop: set it, so that a background loop whose
            # cancel asyncio.wait_for swallowed (Python 3.11) still ends at its next turn.
            self.stopping.set()
            for task in background:
                task.cancel()
            await asyncio.gather(*background, return_exceptions=True)
            await self.listener.leave()
            await self.housekeeper.farewell()
            await self.db.close()
            await self.gate.aclose()
            await self.waits.aclose()
            self.done_check.close()
            self._agents.shutdown(wait=False, cancel_futures=True)

    async def _guarded(self, step: Callable[[], Any]) -> bool:
        """Run a loop step; outages back off and retry, bugs are logged, never fatal. While
        the database is down nothing is read: each read or reclaim would count a delivery of
        entries that cannot run, until they were dead-lettered without ever running."""
        delay = 0.1
        while not self.stopping.is_set():
            try:
                if self.store_down:
                    await self.done_check([PROBE_HASH])  # raises until the database answers
                    self.store_down = False
                    log.info("the database answers again; reading %s", self.config.stream)
                return bool(await step())
            except REDIS_DOWN as exc:
                log.warning("redis unavailable (%s); retrying in %.1f s", exc, delay)
            except Exception as exc:
                await self.step_failed(exc, delay)
            await self.sleep(delay)
            delay = min(delay * 2, MAX_BACKOFF_S)
        return False

    async def step_failed(self, exc: Exception, delay: float) -> None:
        if self.store.transient(exc):
            self.store_down = True
            log.warning("database unavailable (%s); no reads, retrying in %.1f s", exc, delay)
        elif isinstance(exc, redis.ResponseError) and "NOGROUP" in str(exc):
            # The server came back empty (no persistence, a failover): start over.
            log.warning("stream or group %s is gone; recreating it", self.config.group)
            c = self.config
            await self._quietly(bus.ensure_group(self.client, c.stream, c.group))
        else:
            log.exception("worker step failed; continuing")

    async def sleep(self, seconds: float) -> None:
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self.stopping.wait(), timeout=seconds)

    # -- reading -----------------------------------------------------------------------------

    async def _tick(self) -> bool:
        """One read. Returns True when a burst run has nothing left to do."""
        if self.pause.paused:
            return await self.while_paused()
        free = await self.wait_for_slots()
        if free == 0:
            return False
        want = min(free, self.config.batch_size)
        batch = self.held[:want]  # read while paused, now resumed
        if batch:
            del self.held[:want]
        elif self.deferrals.due():
            batch = await self.deferrals.take_due(want)
        if batch:
            await self.admit(batch)
            return False
        block_ms = min(self.config.block_ms, 100) if self.config.burst else self.config.block_ms
        wake = self.deferrals.ms_until_next()
        if wake is not None:
            block_ms = max(1, min(block_ms, wake))
        batch = await read_new(self, want, block_ms)
        if batch and self.pause.paused:
            self.held += batch  # added after the pause: nothing starts until resume
        elif batch:
            await self.admit(batch)
        else:
            return self.config.burst and await self._nothing_left()
        return False

    async def admit(self, batch: list[Delivery]) -> None:
        async with self.admission:
            await self.handle(batch)

    def readmit(self, deliveries: list[Delivery]) -> None:
        """Entries that waited on an attempt now over without acking them: admitted again,
        in a task (the settler calls this), once slots are free."""

        async def again() -> None:
            await self.wait_for_slots()
            if not self.stopping.is_set():
                await self.admit(deliveries)
            # Left pending while stopping: this consumer's restart or a reclaim takes them.

        self._follow(again())

    async def while_paused(self) -> bool:
        """Paused: no reads, no reclaims; what is held finishes and settles meanwhile. A
        burst run ends once it holds nothing (the group's pending entries wait for resume)."""
        if self.config.burst and self._holds_nothing():
            return True
        await self.pause.wait_while_paused(self.stopping)
        return False

    def _holds_nothing(self) -> bool:
        held = self.inflight or self.admitting or len(self.deferrals) or self.flow.ready
        return not held and self.settler.idle

    async def _nothing_left(self) -> bool:
        stream, group = self.config.stream, self.config.group
        return self._holds_nothing() and await bus.pending_count(self.client, stream, group) == 0

    async def wait_for_slots(self) -> int:
        while self.free_slots() <= 0 and not self.stopping.is_set():
            self.slot_freed.clear()
            await self.slot_freed.wait()
        return 0 if self.stopping.is_set() else self.free_slots()

    def free_slots(self) -> int:
        """Agents may run ``concurrency`` at once; finished ones waiting to be settled take no
        slot, but their backlog is bounded so a slow database slows reading down. A home
        group without agents (every agent named) only lets entries by or dead-letters
        them: it reads whole batches, whatever the agents of the other groups hold."""
        if self.chores_only:
            return self.config.batch_size
        backlog_cap = self.config.concurrency + 2 * self.config.batch_size
        return min(self.slots.free(), backlog_cap - len(self.inflight))

    # -- running an agent --------------------------------------------------------------------

    def _start(self, attempt: Attempt) -> None:
        # Claimed now, not once the task first runs: the next read must see the slot gone.
        self.slots.claim()
        self.inflight[attempt.event_hash] = attempt
        attempt.task = asyncio.create_task(self._run(attempt), name=f"agent:{attempt.lease}")
        self.timeline.ran(attempt)

    async def _run(self, attempt: Attempt) -> None:
        ctx = context_for(self.services, self.config, attempt)
        try:
            async with self.slots.turns:  # waits only when the process's loops over-read
                value = await invoke(attempt, ctx, self._agents, self.config.agent_timeout_s)
                outcome = succeeded(attempt, value)
        except BaseException as exc:
            # Caught here, in the task's own coroutine: a GeneratorExit out of a sync agent's
            # future, caught one coroutine further down, came out again at this await.
            own = isinstance(exc, asyncio.CancelledError) and cancelled(asyncio.current_task())
            if own and attempt.cancel is None:
                raise  # the drain cancelled this task: not the agent's doing
            outcome = failed(attempt, exc)
        finally:
            self.slots.give_back()
        outcome.usage, outcome.spent = ctx.usage, ctx.spent
        outcome.duration_ms = (time.monotonic() - attempt.started_mono) * 1000
        await answers_looked_up(attempt)
        if attempt.cancel is not None:  # an operator's: ends cancelled, whatever it returned
            self.cancels.settle(outcome)
        else:
            self.settler.submit(outcome)

    def finished(self, attempt: Attempt) -> None:
        """Called by the settler once an attempt's outcome is stored."""
        if attempt.trace is not None:
            attempt.trace.settled()
        self.inflight.pop(attempt.event_hash, None)
        self.processed += 1
        self.slot_freed.set()

    # -- stopping ----------------------------------------------------------------------------

    async def _drain(self) -> None:
        if self.admitting:
            await asyncio.wait(list(self.admitting), timeout=self.config.drain_timeout_s)
        tasks = [a.task for a in self.inflight.values() if a.task is not None]
        if tasks:
            await asyncio.wait(tasks, timeout=self.config.drain_timeout_s)
        await self.settler.flush(timeout_s=max(self.config.drain_timeout_s, 5.0))
        leftover = list(self.inflight.values())
        if leftover:
            log.warning("drain timeout: releasing %d unfinished events", len(leftover))
            for attempt in leftover:
                if attempt.task is not None:
                    attempt.task.cancel()
            await self.settler.release(leftover, "drain timeout at shutdown; left pending")
