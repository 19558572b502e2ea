"""Two named agents of one event type and a home agent, for the per-agent browser test
(tests/e2e/test_agents_fanout_browser.py).

Loaded by ``runworker`` and the console through ``STREAMDESK_AGENT_MODULES``. The test
process does not import it (that would add them to the test process's default registry).
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

from workers.core.registry import agent


class Ticket(BaseModel):
    n: int


@agent("fanout.ticket", schema=Ticket, name="triage", version="t1")
async def triage(event: Any, ctx: Any) -> dict[str, Any]:
    return {"queue": "billing" if event.data.n % 2 else "support"}


@agent("fanout.ticket", schema=Ticket, name="summarise", version="s1", max_deliveries=1)
async def summarise(event: Any, ctx: Any) -> str:
    """Fails for good on every 10th ticket: its letters are its own, triage runs on."""
    if event.data.n % 10 == 0:
        raise RuntimeError(f"cannot summarise ticket {event.data.n}")
    return f"ticket {event.data.n}, summarised"


@agent("fanout.closed", schema=Ticket)
async def closed(event: Any, ctx: Any) -> None:
    """A home agent: declared without a name, it runs in the home group."""
    return None
