"""Durable writes: a write is confirmed only once a replica holds it.

Redis replication is asynchronous: a primary acknowledges an XADD before any replica has it,
and a failover in between loses it. ``WAIT n timeout`` blocks until ``n`` replicas have
acknowledged every write this connection sent, or the timeout passes, and says how many did.
It must run on the connection that wrote, so it goes in the same pipeline.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from workers.core.errors import NotReplicated

DEFAULT_TIMEOUT_MS = 2000


@dataclass(frozen=True, slots=True)
class Durability:
    """How many replicas must confirm a write (at least 1), within how long."""

    replicas: int = 1
    timeout_ms: int = DEFAULT_TIMEOUT_MS


def queue_wait(pipe: Any, durability: Durability) -> None:
    """Queue WAIT after the pipeline's writes (redis-py's sync or asyncio pipeline)."""
    pipe.execute_command("WAIT", durability.replicas, durability.timeout_ms)


def check_confirmed(confirmed: int, durability: Durability, what: str) -> None:
    if confirmed < durability.replicas:
        raise NotReplicated(
            f"{what} reached the primary, but {confirmed} of the {durability.replicas} "
            f"replica(s) asked for confirmed it within {durability.timeout_ms} ms; it could be "
            "lost if the primary failed now. Publish again: the idempotency gate runs the "
            "event once however many copies arrive."
        )
