"""Dead letters: an entry that cannot or must not run again goes to ``<stream>:dead``."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from redis.asyncio.client import Pipeline

from workers.core.keys import EVENT_FIELD, dead_stream
from workers.core.lua import lua_script
from workers.core.storable import encodable

DEAD_LETTER = lua_script(__package__, "dead_letter")


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
        """Every value encodable: an error text may hold a lone surrogate (an agent's
        message built from a file name), which no Redis command can carry as it is."""
        out: dict[Any, Any] = {k: encodable(str(v)) for k, v in asdict(self).items()}
        out[EVENT_FIELD] = encodable(self.event)
        return out


def queue_dead_letter(pipe: Pipeline, letter: DeadLetter) -> None:
    """XADD to the dead-letter stream, then XACK, in one script: a crash between the two,
    or a letter Redis refuses, leaves the entry pending (seen again) rather than lost."""
    args: list[Any] = [letter.group, letter.entry_id]
    for name, value in letter.fields().items():
        args += [name, value]
    pipe.eval(DEAD_LETTER, 2, letter.stream, dead_stream(letter.stream), *args)
