"""Which agents handle which event type, and the schema of that type's ``data``.

One agent per type without a name (the home group's, as ever), any number with one
(``name=``, each in a group of its own: ``workers/core/fanout.py``)."""

from __future__ import annotations

import builtins
import hashlib
import inspect
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ValidationError

from workers.core.errors import ConfigurationError, InvalidEventData, UnknownEventType
from workers.core.events import first_error
from workers.core.fanout import check_name, group_of, run_hash
from workers.core.retry import Retry

Handler = Callable[..., Any]
# Called once when an agent's event is dead-lettered: ``on_failure(event, failure)``.
FailureHook = Callable[..., Any]
# ``key=``: the event's subject, or a dotted path into its data.
_KEY = re.compile(r"^(subject|data(\.[A-Za-z_][\w-]*)+)$")


@dataclass(frozen=True, slots=True)
class Declared:
    """What an agent declares about its runs; None: the worker's setting."""

    timeout_s: float | None = None
    max_deliveries: int | None = None
    retry: Retry | None = None
    on_failure: FailureHook | None = None
    # Flow control (workers/flow): runs of one key value at once, across the fleet.
    key: str | None = None
    concurrency: int | None = None

    def __post_init__(self) -> None:
        if self.key is not None and not _KEY.match(self.key):
            raise ConfigurationError(
                f"key must be 'subject' or 'data.<field>' (a dotted path), got {self.key!r}"
            )
        if self.concurrency is not None and self.concurrency < 1:
            raise ConfigurationError(f"concurrency must be >= 1, got {self.concurrency}")
        if self.timeout_s is not None and not self.timeout_s >= 0:
            raise ConfigurationError(f"timeout_s must be >= 0 (0: none), got {self.timeout_s!r}")
        if self.max_deliveries is not None and self.max_deliveries < 1:
            raise ConfigurationError(f"max_deliveries must be >= 1, got {self.max_deliveries}")


NOTHING_DECLARED = Declared()


@dataclass(frozen=True, slots=True)
class AgentSpec:
    type: str
    schema: builtins.type[BaseModel]
    handler: Handler
    is_async: bool
    # A schema-only type (webhook mappings): publish validates it, a real agent replaces it.
    placeholder: bool = False
    declared: Declared = NOTHING_DECLARED
    # Which version of the agent ran: declared (``version="2"``), else a hash of the
    # handler's code; recorded on each run, so runs of two versions can be told apart.
    version: str = ""
    # ``@agent(name=)``: "" for the type's home agent, which runs in the home group.
    agent: str = ""

    @property
    def handler_name(self) -> str:
        return f"{self.handler.__module__}.{self.handler.__qualname__}"

    @property
    def name(self) -> str:
        """The agent's name: the one given, else its event type (``runworker --agent``)."""
        return self.agent or self.type

    def group(self, home: str) -> str:
        """Its consumer group, given the home group's name."""
        return group_of(home, self.agent)

    def run_hash(self, event_hash: str, salt: str = "") -> str:
        """Its run of the event of ``event_hash`` (its gate namespace)."""
        return run_hash(event_hash, self.agent, salt)


MAX_VERSION_CHARS = 64


def check_version(version: Any) -> str:
    if not isinstance(version, str) or not 0 < len(version) <= MAX_VERSION_CHARS:
        raise ConfigurationError(
            f"version must be a string of 1 to {MAX_VERSION_CHARS} characters, got {version!r}"
        )
    return version


def code_version(handler: Handler) -> str:
    """12 hex digits of a hash of the handler's source (its code object's bytes and
    constants when the source cannot be read): a changed body, a changed version. Only the
    handler itself: a change in a helper it calls needs ``version=``."""
    try:
        text = inspect.getsource(handler).encode()
    except (OSError, TypeError):
        code = getattr(handler, "__code__", None)
        text = repr((code.co_code, code.co_consts)).encode() if code else repr(handler).encode()
    return hashlib.sha256(text).hexdigest()[:12]


async def _no_agent(event: Any, ctx: Any) -> None:
    """The handler of a schema-only type: nothing to do yet."""
    return None


class Registry:
    """Event types and their agents. One default instance; tests may build their own.

    The engine runs a view of it per consumer group (``home``, ``only``): the agents that
    group runs, with ``whole`` the registry it was cut from (what other groups take)."""

    def __init__(self) -> None:
        # The home agent (or schema-only placeholder) of each type, and the named agents.
        self._specs: dict[str, AgentSpec] = {}
        self._named: dict[str, AgentSpec] = {}
        self.whole: Registry = self
        # False for a named agent's view: its group leaves the stream's chores to home's.
        self.runs_home = True

    def register(
        self,
        event_type: str,
        schema: type[BaseModel],
        handler: Handler,
        declared: Declared = NOTHING_DECLARED,
        version: str | None = None,
        name: str | None = None,
    ) -> AgentSpec:
        is_async = inspect.iscoroutinefunction(handler)
        version = check_version(version) if version is not None else code_version(handler)
        agent = "" if name is None else check_name(name)
        self._check_new(event_type, schema, handler, agent)
        spec = AgentSpec(
            event_type, schema, handler, is_async, declared=declared, version=version, agent=agent
        )
        if agent:
            self._named[agent] = spec
            placeholder = self._specs.get(event_type)
            if placeholder is not None and placeholder.placeholder:
                del self._specs[event_type]  # a real agent replaces the no-op
        else:
            self._specs[event_type] = spec
        return spec

    def _check_new(
        self, event_type: str, schema: type[BaseModel], handler: Handler, agent: str
    ) -> None:
        """One home agent per type, names unique, one schema per type (publish validates
        with it, whichever agent takes the event)."""
        if agent:
            existing = self._named.get(agent)
            if existing is not None and existing.handler is not handler:
                raise ValueError(f"an agent is named {agent!r} already: {existing.handler_name}")
            if agent in self._specs and agent != event_type:
                raise ValueError(f"{agent!r} is an event type: an agent's name must not be one")
        else:
            existing = self._specs.get(event_type)
            taken = existing is not None and not existing.placeholder
            if existing is not None and taken and existing.handler is not handler:
                raise ValueError(
                    f"event type {event_type!r} already has an agent: {existing.handler_name} "
                    "(give each agent of a type a name=: @agent(type, schema=S, name='triage'))"
                )
            if event_type in self._named and self._named[event_type].type != event_type:
                raise ValueError(f"{event_type!r} is an agent's name: a type must not be one")
        for other in self.agents_of(event_type):
            if other.placeholder or other.handler is handler:
                continue
            if other.schema is not schema:
                raise ConfigurationError(
                    f"the agents of {event_type!r} must share one schema: {other.name} has "
                    f"{other.schema.__name__}, this one {schema.__name__}"
                )

    def register_schema(self, event_type: str, schema: type[BaseModel]) -> AgentSpec:
        """A type events may be published with before any agent handles it: a worker runs a
        no-op for its events until an agent is registered (which replaces this one)."""
        existing = self.agents_of(event_type)
        if existing:
            return existing[0]
        spec = AgentSpec(event_type, schema, _no_agent, True, placeholder=True)
        self._specs[event_type] = spec
        return spec

    def agent(
        self,
        event_type: str,
        *,
        schema: type[BaseModel],
        name: str | None = None,
        timeout_s: float | None = None,
        max_deliveries: int | None = None,
        retry: Retry | None = None,
        on_failure: FailureHook | None = None,
        key: str | None = None,
        concurrency: int | None = None,
        version: str | None = None,
    ) -> Callable[[Handler], Handler]:
        """Decorator: ``@registry.agent("github.issue.opened", schema=IssueOpened)``.
        ``name``: one of several agents of the type, in a consumer group of its own (its
        own pending entries, dead letters, pause and idempotency; docs/agents.md); without
        it, the type's one agent in the home group. ``timeout_s`` (0: none),
        ``max_deliveries`` and ``retry`` default to the worker's settings;
        ``on_failure(event, failure)`` is called once when its event is dead-lettered;
        ``key`` and ``concurrency``: at most that many runs per key value at once, in
        publish order, across every worker (docs/flow.md, docs/agents.md); ``version``:
        recorded on each run (default: a hash of the handler's code)."""
        declared = Declared(timeout_s, max_deliveries, retry, on_failure, key, concurrency)

        def decorate(handler: Handler) -> Handler:
            self.register(event_type, schema, handler, declared, version, name)
            return handler

        return decorate

    def get(self, event_type: str) -> AgentSpec:
        """The type's agent in this registry: its home agent, else its first named one."""
        spec = self._specs.get(event_type)
        if spec is not None:
            return spec
        named = self.agents_of(event_type)
        if named:
            return named[0]
        raise UnknownEventType(f"no agent is registered for event type {event_type!r}")

    def agents_of(self, event_type: str) -> list[AgentSpec]:
        """Every agent of the type, the home one first, then the named ones by name."""
        home = self._specs.get(event_type)
        named = sorted((s for s in self._named.values() if s.type == event_type), key=_by_name)
        return ([home] if home is not None else []) + named

    def by_name(self, name: str) -> AgentSpec | None:
        """The agent ``runworker --agent NAME`` means: a named agent, or a type's home agent."""
        spec = self._named.get(name) or self._specs.get(name)
        return None if spec is None or spec.placeholder else spec

    def named(self) -> list[AgentSpec]:
        return sorted(self._named.values(), key=_by_name)

    def home(self) -> Registry:
        """The view the home group runs: the agents without a name (and placeholders)."""
        view = Registry()
        view._specs = dict(self._specs)
        view.whole = self.whole
        return view

    def only(self, spec: AgentSpec) -> Registry:
        """The view a named agent's group runs: that agent alone."""
        view = Registry()
        view._specs = {spec.type: spec}
        view.whole = self.whole
        view.runs_home = False
        return view

    def validate(self, event_type: str, data: Any) -> BaseModel:
        """Parse ``data`` with the type's schema; the error names the field."""
        schema = self.get(event_type).schema
        try:
            return schema.model_validate(data)
        except ValidationError as exc:
            raise InvalidEventData(f"{event_type}: data.{first_error(exc)}") from exc

    def __contains__(self, event_type: object) -> bool:
        return event_type in self._specs or any(s.type == event_type for s in self._named.values())

    def __iter__(self) -> Iterator[AgentSpec]:
        """Every agent (and placeholder), by type, the home agent first."""
        every = [*self._specs.values(), *self._named.values()]
        return iter(sorted(every, key=lambda s: (s.type, s.agent)))


def _by_name(spec: AgentSpec) -> str:
    return spec.agent


default_registry = Registry()


# ``@agent(...)``: register in the default registry (agents live in an app's ``agents.py``).
agent = default_registry.agent
