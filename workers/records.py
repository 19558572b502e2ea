"""What the engine tells the run store: attempts and their outcomes. Pure data."""

from __future__ import annotations

from dataclasses import dataclass
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


@dataclass(frozen=True, slots=True)
class Finish:
    run: Run
    duration_ms: float | None
    result: Any = None
    error: str = ""
    dead: bool = False
