"""What bench.fanout's agents share (imported by their modules, never by the bench itself)."""

from __future__ import annotations

import time
from typing import Any

from pydantic import BaseModel

from workers.core.events import Event

TYPE = "fanout.ticket"


class Ticket(BaseModel):
    n: int


def probe(event: Event[Ticket]) -> dict[str, Any]:
    """Take the clock and return: the engine's work alone, as ``make bench``'s probe."""
    return {"n": event.data.n, "started_ns": time.time_ns()}
