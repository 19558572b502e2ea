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
from workers.runtime.llm.config import LLMConfig
from workers.runtime.ratelimit import Limiter

if TYPE_CHECKING:
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
    ) -> None:
        self.services = services
        self.entry_id = entry_id
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
        self._stored: dict[str, Any] | None = None
        self._used: set[str] = set()
        self._loop = asyncio.get_running_loop()

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
        ``Deferred``: the engine releases the event and reruns it when its token is due."""
        if self.services.limiter is None:
            raise StepError(f"rate budget {budget!r}: this worker has no rate limiter")
        grant = await self.services.limiter.take(budget, self.event_hash)
        if not grant.ok:
            raise Deferred(budget, grant.wait_ms)

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
    """Decorate a tool function: each call takes a token from ``budget`` first."""

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
