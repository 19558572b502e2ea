"""The worker's collaborators that its settler and housekeeper share, handed to each so
neither needs the worker itself (``worker.py`` builds them; nothing here imports it)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from redis.asyncio import Redis

    from workers.core.config import EngineConfig
    from workers.engine.timeline import Timeline
    from workers.gate import Gate
    from workers.store.dbwriter import DbWriter


@dataclass(frozen=True, slots=True)
class Ports:
    config: EngineConfig
    client: Redis
    gate: Gate
    # The worker's database threads (writes grouped on one, reads on another).
    db: DbWriter
    timeline: Timeline


class UsesPorts:
    """Holds the shared collaborators as its own attributes, for the settler and the
    housekeeper: one unpacking for both, and settle's hot path still reads each with one
    attribute lookup on ``self``."""

    def __init__(self, ports: Ports) -> None:
        self.config = ports.config
        self.keys = ports.config.keys
        self.client = ports.client
        self.gate = ports.gate
        self.db = ports.db
        self.timeline = ports.timeline
