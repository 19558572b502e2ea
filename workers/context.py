"""What an agent gets beside its event."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

log = logging.getLogger("streamdesk.agent")


@dataclass(frozen=True, slots=True)
class AgentContext:
    consumer: str
    stream: str
    group: str
    event_hash: str
    # The fencing token of this attempt: grows with every takeover of the event.
    token: int
    deliveries: int

    @property
    def log(self) -> logging.LoggerAdapter[Any]:
        return logging.LoggerAdapter(
            log, {"event_hash": self.event_hash, "consumer": self.consumer, "token": self.token}
        )
