"""Which agent handles which event type, and the schema of that type's ``data``."""

from __future__ import annotations

import builtins
import inspect
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ValidationError

from workers.core.errors import InvalidEventData, UnknownEventType
from workers.core.events import first_error

Handler = Callable[..., Any]


@dataclass(frozen=True, slots=True)
class AgentSpec:
    type: str
    schema: builtins.type[BaseModel]
    handler: Handler
    is_async: bool
    # A schema-only type (webhook mappings): publish validates it, a real agent replaces it.
    placeholder: bool = False

    @property
    def name(self) -> str:
        return f"{self.handler.__module__}.{self.handler.__qualname__}"


async def _no_agent(event: Any, ctx: Any) -> None:
    """The handler of a schema-only type: nothing to do yet."""
    return None


class Registry:
    """Event types and their agents. One default instance; tests may build their own."""

    def __init__(self) -> None:
        self._specs: dict[str, AgentSpec] = {}

    def register(self, event_type: str, schema: type[BaseModel], handler: Handler) -> AgentSpec:
        existing = self._specs.get(event_type)
        if existing is not None and not existing.placeholder and existing.handler is not handler:
            raise ValueError(f"event type {event_type!r} already has an agent: {existing.name}")
        spec = AgentSpec(event_type, schema, handler, inspect.iscoroutinefunction(handler))
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

    def agent(self, event_type: str, *, schema: type[BaseModel]) -> Callable[[Handler], Handler]:
        """Decorator: ``@registry.agent("github.issue.opened", schema=IssueOpened)``."""

        def decorate(handler: Handler) -> Handler:
            self.register(event_type, schema, handler)
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


def agent(event_type: str, *, schema: type[BaseModel]) -> Callable[[Handler], Handler]:
    """Register an agent in the default registry (agents live in an app's ``agents.py``)."""
    return default_registry.agent(event_type, schema=schema)
