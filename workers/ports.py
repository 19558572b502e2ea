"""The worker's collaborators that its settler and housekeeper share, handed to each so
neither needs the worker itself (``engine.py`` builds them; nothing here imports it)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from redis.asyncio import Redis

    from workers.config import EngineConfig
    from workers.dbwriter import DbWriter
    from workers.gate import Gate
    from workers.steps import Timeline


@dataclass(frozen=True, slots=True)
class Ports:
    config: EngineConfig
    client: Redis
    gate: Gate
    # The worker's database threads (writes grouped on one, reads on another).
    db: DbWriter
    timeline: Timeline
