"""What the engine tells the run store: attempts and their outcomes. Pure data."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any


@dataclass(frozen=True, slots=True)
class Run:
    """One attempt at one event, as the database sees it."""

    event_hash: str
    lease: str
    token: int
    consumer: str
    event_type: str
    event_id: str
    source: str
    subject: str
    stream: str
    entry_id: str
    started_at: datetime | None
    takeover: bool = False
    # The entry's delivery count when this attempt started.
    deliveries: int = 0
    # The agent's version (``AgentSpec.version``).
    version: str = ""
    # The agent's name ("" : its type's agent without a name), the event's own hash, and
    # the run a forced replay repeats (workers/core/fanout.py).
    agent: str = ""
    event_key: str = ""
    replay_of: str = ""


@dataclass(slots=True)
class Usage:
    """Model calls and their tokens and estimated cost."""

    calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float = 0.0

    def add(self, prompt_tokens: int, completion_tokens: int, cost_usd: float) -> None:
        self.calls += 1
        self.prompt_tokens += prompt_tokens
        self.completion_tokens += completion_tokens
        self.cost_usd += cost_usd

    def merge(self, other: Usage) -> None:
        self.calls += other.calls
        self.prompt_tokens += other.prompt_tokens
        self.completion_tokens += other.completion_tokens
        self.cost_usd += other.cost_usd


@dataclass(frozen=True, slots=True)
class Finish:
    run: Run
    duration_ms: float | None
    result: Any = None
    error: str = ""
    dead: bool = False
    # The run's model calls so far (its stored steps included).
    usage: Usage = field(default_factory=Usage)


@dataclass(frozen=True, slots=True)
class StepWrite:
    event_hash: str
    name: str
    value: Any
    token: int
    consumer: str
    lease: str
    duration_ms: float
    at: datetime
