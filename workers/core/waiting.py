"""What a run waits for and where its wait stands: the terms between an agent's context
(``ctx.sleep``, ``ctx.wait_for_event``) and the waits' store (workers/waits/). Pure."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol


@dataclass(frozen=True, slots=True)
class WaitFor:
    """``kind`` ``event`` (``event_type`` and ``match``) or ``sleep``; ``delay_ms`` from now
    (a timeout, a sleep) or ``at_ms`` (epoch ms, a sleep_until), 0: none."""

    kind: str
    step: str
    event_type: str = ""
    match: dict[str, Any] | None = None
    delay_ms: int = 0
    at_ms: int = 0
    # What the operator is asked, shown beside Approve / Reject (a LangGraph interrupt's
    # "question"); "" for none.
    note: str = ""


@dataclass(frozen=True, slots=True)
class WaitState:
    """``waiting``, ``answered`` (``answer``: the event's JSON), ``timed_out`` (for a sleep:
    it is over) or ``cancelled``; ``until_ms``: 0 if none."""

    state: str
    until_ms: int
    now_ms: int
    answer: str = ""


class WaitBook(Protocol):
    """Where runs' waits are written down (``workers.waits.Waits``)."""

    async def wait(
        self, event_hash: str, run_type: str, envelope: str, on: WaitFor
    ) -> WaitState: ...
