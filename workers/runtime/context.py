"""What an agent gets beside its event: durable steps, shared rate budgets, model calls and
their usage. ``AgentContext`` for async agents; ``SyncAgentContext`` (same names, blocking)
for sync agents, which run in the worker's thread pool."""

from __future__ import annotations

import asyncio
import contextvars
import functools
import inspect
import logging
import time
from collections.abc import Callable, Coroutine
from concurrent.futures import Executor
from contextvars import ContextVar
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, ParamSpec, Protocol, TypeVar, cast

from pydantic_core import PydanticSerializationError, to_jsonable_python

from workers.core import tracing
from workers.core.errors import Deferred, StepError
from workers.core.logs import HANDLING
from workers.core.records import StepWrite, Usage
from workers.core.waiting import WaitBook
from workers.runtime.budget_keys import render
from workers.runtime.llm.config import LLMConfig
from workers.runtime.ratelimit import Limiter
from workers.runtime.waiting import RunWaits

if TYPE_CHECKING:
    from workers.core.events import Envelope
    from workers.runtime.llm.models import ChatModel, Rules

log = logging.getLogger("streamdesk.agent")
T = TypeVar("T")
R = TypeVar("R")
P = ParamSpec("P")

MAX_NAME_CHARS = 200

# The logs' variable itself: setting it once per attempt serves current_context() and
# puts the event's fields on every line the agent logs (workers/core/logs.py).
_current: ContextVar[AgentContext | None] = HANDLING


def current_context() -> AgentContext:
    """The context of the agent running in this task or thread (for decorators on tools)."""
    ctx = _current.get()
    if ctx is None:
        raise StepError("no agent is running here: call this from inside an agent")
    return ctx


class StepStore(Protocol):
    """The worker's database access for steps (``RunStore`` through its ``DbWriter``)."""

    async def load_steps(self, event_hash: str) -> dict[str, Any]: ...
    async def save_step(self, write: StepWrite) -> Any: ...


@dataclass(frozen=True, slots=True)
class Services:
    """What every agent of one worker shares."""

    steps: StepStore
    limiter: Limiter | None = None
    llm: LLMConfig = field(default_factory=LLMConfig)
    # Where an async agent's sync step functions run.
    executor: Executor | None = None
    # Where runs' waits are written down (ctx.sleep, ctx.wait_for_event; workers/waits/).
    waits: WaitBook | None = None


class AgentContext:
    def __init__(
        self,
        services: Services,
        *,
        consumer: str,
        stream: str,
        group: str,
        event_type: str,
        event_hash: str,
        token: int,
        deliveries: int,
        lease: str,
        entry_id: str = "",
        envelope: Envelope | None = None,
    ) -> None:
        self.services = services
        self.entry_id = entry_id
        # What a keyed budget's template is filled from.
        self.envelope = envelope
        self.consumer = consumer
        self.stream = stream
        self.group = group
        self.event_type = event_type
        self.event_hash = event_hash
        # The fencing token of this attempt: grows with every takeover of the event.
        self.token = token
        self.deliveries = deliveries
        self.lease = lease
        # Model calls of the whole run (stored steps included: each was paid once) ...
        self.usage = Usage()
        # ... and those this attempt paid for.
        self.spent = Usage()
        self.replayed: set[str] = set()
        # An operator asked to cancel this run (workers/cancel/): a long agent checks it
        # between steps. An async agent is also cancelled (CancelledError at its await).
        self.cancelled = False
        self._stored: dict[str, Any] | None = None
        self._used: set[str] = set()
        self._loop = asyncio.get_running_loop()
        self._waits: RunWaits | None = None

    # -- waits (workers/runtime/waiting.py) --------------------------------------------------

    @property
    def waits(self) -> RunWaits:
        if self._waits is None:
            self._waits = RunWaits(self, self.services.waits)
        return self._waits

    async def sleep(self, seconds: float, *, name: str | None = None) -> None:
        """Sleep ``seconds`` durably: the run gives back its slot and its lease, and goes on
        here on any worker once they passed, its earlier steps not run again. ``name``: the
        step's name (default ``sleep#<n>``, numbered in call order)."""
        await self.waits.sleep(seconds, name)

    async def sleep_until(self, when: datetime | float, *, name: str | None = None) -> None:
        """``sleep`` until ``when`` (an aware datetime, or epoch seconds)."""
        await self.waits.sleep_until(when, name)

    async def wait_for_event(
        self,
        event_type: str,
        match: dict[str, Any] | None = None,
        timeout_s: float | None = None,
        *,
        name: str | None = None,
        note: str | None = None,
    ) -> Envelope | None:
        """Wait, holding no slot, for an event of ``event_type`` published after the wait
        began whose fields equal ``match`` (``{"subject": ..., "data.order_id": 42}``);
        returns it, or None after ``timeout_s`` (None: no timeout). ``note``: what a person
        answering it is asked (the console shows it). docs/waits.md."""
        return await self.waits.wait_for_event(event_type, match, timeout_s, name, note)

    @property
    def log(self) -> logging.LoggerAdapter[Any]:
        return logging.LoggerAdapter(
            log, {"event_hash": self.event_hash, "consumer": self.consumer, "token": self.token}
        )

    def idempotency_key(self, name: str) -> str:
        """The same for every attempt at this event's step ``name``: pass it downstream
        (``Idempotency-Key`` headers, unique constraints) so a retried side effect is a no-op."""
        return f"{self.event_hash}:{name}"

    # -- durable steps -----------------------------------------------------------------------

    async def step(self, name: str, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Any:
        """Run ``fn(*args, **kwargs)`` once for this event and return its result as JSON
        (a dict, list, str...). Once stored, every later attempt gets the stored result and
        ``fn`` does not run again. Sync functions run in a worker thread."""
        if tracing.ACTIVE:
            with tracing.span(f"step {name}", {"streamdesk.step.name": name}) as span:
                value = await self._step(name, fn, args, kwargs)
                span.set_attribute("streamdesk.step.replayed", name in self.replayed)
                return value
        return await self._step(name, fn, args, kwargs)

    async def _step(
        self, name: str, fn: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> Any:
        found, value = await self._lookup(name)
        if found:
            return value
        started = time.monotonic()
        if inspect.iscoroutinefunction(fn):
            value = await fn(*args, **kwargs)
        else:
            call = functools.partial(contextvars.copy_context().run, fn, *args, **kwargs)
            value = await self._loop.run_in_executor(self.services.executor, call)
        if inspect.isawaitable(value):
            value = await value
        return await self._store(name, value, started)

    async def _lookup(self, name: str) -> tuple[bool, Any]:
        if not name or len(name) > MAX_NAME_CHARS:
            raise StepError(f"a step name must be 1 to {MAX_NAME_CHARS} characters: {name!r}")
        if name in self._used:
            raise StepError(f"step {name!r} ran twice in one run: step names must be unique")
        self._used.add(name)
        if self._stored is None:
            self._stored = await self.services.steps.load_steps(self.event_hash)
        if name in self._stored:
            self.replayed.add(name)
            return True, self._stored[name]
        return False, None

    async def _store(self, name: str, value: Any, started: float) -> Any:
        try:
            jsonable = to_jsonable_python(value)
        except PydanticSerializationError as exc:
            raise StepError(f"step {name!r} returned a value that is not JSON: {exc}") from exc
        write = StepWrite(
            self.event_hash,
            name,
            jsonable,
            self.token,
            self.consumer,
            self.lease,
            (time.monotonic() - started) * 1000,
            datetime.now(UTC),
        )
        stored = await self.services.steps.save_step(write)
        assert self._stored is not None
        self._stored[name] = stored
        return stored

    # -- rate budgets ------------------------------------------------------------------------

    async def tool(self, budget: str) -> None:
        """Take a token from the shared budget ``budget``. When it is spent this raises
        ``Deferred``: the engine releases the event and reruns it when its token is due.
        ``budget`` may be keyed by the event, ``"github:{data.installation_id}"``: one
        bucket per value, each with the rate and burst of the budget ``github``."""
        if self.services.limiter is None:
            raise StepError(f"rate budget {budget!r}: this worker has no rate limiter")
        bucket = render(budget, self.envelope)
        grant = await self.services.limiter.take(bucket, self.event_hash)
        if not grant.ok:
            raise Deferred(bucket, grant.wait_ms)

    # -- models ------------------------------------------------------------------------------

    def model(self, rules: Rules | None = None) -> ChatModel:
        """The configured OpenAI-compatible model; with none configured, ``rules`` (the
        deterministic built-in model), so agents run offline and tests repeat."""
        from workers.runtime.llm.models import select_model

        return select_model(self.services.llm, rules)

    def add_usage(
        self, model: str, prompt_tokens: int, completion_tokens: int, *, step: str
    ) -> None:
        """Count a model call made in step ``step`` on this run (cost from the price table)."""
        cost = self.services.llm.cost(model, prompt_tokens, completion_tokens)
        self.usage.add(prompt_tokens, completion_tokens, cost)
        if step not in self.replayed:
            self.spent.add(prompt_tokens, completion_tokens, cost)

    def enter(self) -> contextvars.Token[AgentContext | None]:
        return _current.set(self)

    def reset(self, token: contextvars.Token[AgentContext | None]) -> None:
        _current.reset(token)

    def wait(self, awaitable: Coroutine[Any, Any, T]) -> T:
        """From a sync agent's thread: run ``awaitable`` on the worker's loop, block for it."""
        return asyncio.run_coroutine_threadsafe(awaitable, self._loop).result()


class SyncAgentContext:
    """The context of a sync agent: the same calls, blocking its worker thread."""

    def __init__(self, ctx: AgentContext) -> None:
        self.ctx = ctx
        self.consumer, self.stream, self.group = ctx.consumer, ctx.stream, ctx.group
        self.event_type, self.event_hash, self.token = ctx.event_type, ctx.event_hash, ctx.token
        self.deliveries, self.lease, self.entry_id = ctx.deliveries, ctx.lease, ctx.entry_id

    @property
    def log(self) -> logging.LoggerAdapter[Any]:
        return self.ctx.log

    @property
    def usage(self) -> Usage:
        return self.ctx.usage

    @property
    def cancelled(self) -> bool:
        """An operator asked to cancel this run: a thread cannot be stopped, so a long sync
        agent checks this between steps and returns (the run ends cancelled either way)."""
        return self.ctx.cancelled

    def idempotency_key(self, name: str) -> str:
        return self.ctx.idempotency_key(name)

    def step(self, name: str, fn: Callable[..., T], /, *args: Any, **kwargs: Any) -> Any:
        if tracing.ACTIVE:
            with tracing.span(f"step {name}", {"streamdesk.step.name": name}):
                return self._step(name, fn, args, kwargs)
        return self._step(name, fn, args, kwargs)

    def _step(
        self, name: str, fn: Callable[..., T], args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> Any:
        found, value = self.ctx.wait(self.ctx._lookup(name))
        if found:
            return value
        started = time.monotonic()
        value = fn(*args, **kwargs)
        return self.ctx.wait(self.ctx._store(name, value, started))

    def tool(self, budget: str) -> None:
        self.ctx.wait(self.ctx.tool(budget))

    def sleep(self, seconds: float, *, name: str | None = None) -> None:
        self.ctx.wait(self.ctx.sleep(seconds, name=name))

    def sleep_until(self, when: datetime | float, *, name: str | None = None) -> None:
        self.ctx.wait(self.ctx.sleep_until(when, name=name))

    def wait_for_event(
        self,
        event_type: str,
        match: dict[str, Any] | None = None,
        timeout_s: float | None = None,
        *,
        name: str | None = None,
        note: str | None = None,
    ) -> Envelope | None:
        return self.ctx.wait(
            self.ctx.wait_for_event(event_type, match, timeout_s, name=name, note=note)
        )

    def model(self, rules: Rules | None = None) -> ChatModel:
        return self.ctx.model(rules)

    def add_usage(
        self, model: str, prompt_tokens: int, completion_tokens: int, *, step: str
    ) -> None:
        self.ctx.add_usage(model, prompt_tokens, completion_tokens, step=step)

    def wait(self, awaitable: Coroutine[Any, Any, T]) -> T:
        """Run a coroutine (an LLM loop, say) on the worker's loop from this thread."""
        return self.ctx.wait(awaitable)


def rate_limited(budget: str) -> Callable[[Callable[P, R]], Callable[P, R]]:
    """Decorate a tool function: each call takes a token from ``budget`` first (a budget
    name, or a keyed one such as ``"github:{data.installation_id}"``)."""

    def decorate(fn: Callable[P, R]) -> Callable[P, R]:
        return cast(Callable[P, R], _limited(budget, fn))

    return decorate


def _limited(budget: str, fn: Callable[..., Any]) -> Callable[..., Any]:
    if inspect.iscoroutinefunction(fn):

        @functools.wraps(fn)
        async def limited_async(*args: Any, **kwargs: Any) -> Any:
            await current_context().tool(budget)
            return await fn(*args, **kwargs)

        return limited_async

    @functools.wraps(fn)
    def limited(*args: Any, **kwargs: Any) -> Any:
        ctx = current_context()
        if _on_loop(ctx):
            raise StepError(
                f"{fn.__name__}: a sync rate-limited tool must run in a thread; "
                "call it through ctx.step or make it async"
            )
        ctx.wait(ctx.tool(budget))
        return fn(*args, **kwargs)

    return limited


def _on_loop(ctx: AgentContext) -> bool:
    try:
        return asyncio.get_running_loop() is ctx._loop
    except RuntimeError:
        return False
