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
