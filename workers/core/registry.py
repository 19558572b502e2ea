"""Which agent handles which event type, and the schema of that type's ``data``."""

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

    @property
    def name(self) -> str:
        return f"{self.handler.__module__}.{self.handler.__qualname__}"


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
    """Event types and their agents. One default instance; tests may build their own."""

    def __init__(self) -> None:
        self._specs: dict[str, AgentSpec] = {}

    def register(
        self,
        event_type: str,
        schema: type[BaseModel],
        handler: Handler,
        declared: Declared = NOTHING_DECLARED,
        version: str | None = None,
    ) -> AgentSpec:
        existing = self._specs.get(event_type)
        if existing is not None and not existing.placeholder and existing.handler is not handler:
            raise ValueError(f"event type {event_type!r} already has an agent: {existing.name}")
        is_async = inspect.iscoroutinefunction(handler)
        version = check_version(version) if version is not None else code_version(handler)
        spec = AgentSpec(event_type, schema, handler, is_async, declared=declared, version=version)
        self._specs[event_type] = spec
        return spec

    def register_schema(self, event_type: str, schema: type[BaseModel]) -> AgentSpec:
        """A type events may be published with before any agent handles it: a worker runs a
        no-op for its events until an agent is registered (which replaces this one)."""
        existing = self._specs.get(event_type)
        if existing is not None:
            return existing
        spec = AgentSpec(event_type, schema, _no_agent, True, placeholder=True)
        self._specs[event_type] = spec
        return spec

    def agent(
        self,
        event_type: str,
        *,
        schema: type[BaseModel],
        timeout_s: float | None = None,
        max_deliveries: int | None = None,
        retry: Retry | None = None,
        on_failure: FailureHook | None = None,
        key: str | None = None,
        concurrency: int | None = None,
        version: str | None = None,
    ) -> Callable[[Handler], Handler]:
        """Decorator: ``@registry.agent("github.issue.opened", schema=IssueOpened)``.
        ``timeout_s`` (0: none), ``max_deliveries`` and ``retry`` default to the worker's
        settings; ``on_failure(event, failure)`` is called once when its event is
        dead-lettered; ``key`` and ``concurrency``: at most that many runs per key value at
        once, in publish order, across every worker (docs/flow.md, docs/agents.md);
        ``version``: recorded on each run (default: a hash of the handler's code)."""
        declared = Declared(timeout_s, max_deliveries, retry, on_failure, key, concurrency)

        def decorate(handler: Handler) -> Handler:
            self.register(event_type, schema, handler, declared, version)
            return handler

        return decorate

    def get(self, event_type: str) -> AgentSpec:
        try:
            return self._specs[event_type]
        except KeyError:
            raise UnknownEventType(
                f"no agent is registered for event type {event_type!r}"
            ) from None

    def validate(self, event_type: str, data: Any) -> BaseModel:
        """Parse ``data`` with the type's schema; the error names the field."""
        schema = self.get(event_type).schema
        try:
            return schema.model_validate(data)
        except ValidationError as exc:
            raise InvalidEventData(f"{event_type}: data.{first_error(exc)}") from exc

    def __contains__(self, event_type: object) -> bool:
        return event_type in self._specs

    def __iter__(self) -> Iterator[AgentSpec]:
        return iter(sorted(self._specs.values(), key=lambda s: s.type))


default_registry = Registry()


# ``@agent(...)``: register in the default registry (agents live in an app's ``agents.py``).
agent = default_registry.agent
