"""Dead letters: an entry that cannot or must not run again goes to ``<stream>:dead``."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from redis.asyncio.client import Pipeline

from workers.core.keys import EVENT_FIELD, dead_stream


@dataclass(frozen=True, slots=True)
class DeadLetter:
    event: str
    stream: str
    group: str
    entry_id: str
    deliveries: int
    reason: str
    error: str
    dead_at: str
    by: str

    def fields(self) -> dict[Any, Any]:
        out: dict[Any, Any] = {k: str(v) for k, v in asdict(self).items()}
        out[EVENT_FIELD] = self.event
        return out


def queue_dead_letter(pipe: Pipeline, letter: DeadLetter) -> None:
    """XADD to the dead-letter stream, then XACK: in this order, so a crash between the
    two leaves the entry pending (seen again) rather than lost."""
    pipe.xadd(dead_stream(letter.stream), letter.fields())
    pipe.xack(letter.stream, letter.group, letter.entry_id)
