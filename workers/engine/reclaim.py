"""Taking over entries that idle (dead or failed) consumers left pending."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

from redis.asyncio import Redis

from workers.redis.bus import Delivery, delivery_counts

log = logging.getLogger(__name__)

# XAUTOCLAIM examines at most COUNT * 10 PEL entries per call: a few calls per tick is enough.
MAX_CALLS_PER_TICK = 8


@dataclass(slots=True)
class Reclaimed:
    deliveries: list[Delivery] = field(default_factory=list)
    # Ids Redis (>= 7.0) dropped from the PEL because their entries were deleted.
    deleted_ids: list[str] = field(default_factory=list)
    # Redis 6.2 answers nil for a deleted entry, without its id.
    nil_payloads: int = 0


class Reclaimer:
    """Walks the group's PEL with XAUTOCLAIM, a bounded slice per tick, keeping its cursor."""

    def __init__(self, client: Redis, stream: str, group: str, consumer: str, idle_ms: int) -> None:
        self.client = client
        self.stream = stream
        self.group = group
        self.consumer = consumer
        self.idle_ms = idle_ms
        self.cursor = "0-0"

    async def claim(self, count: int) -> Reclaimed:
        found = Reclaimed()
        for _ in range(MAX_CALLS_PER_TICK):
            want = count - len(found.deliveries)
            if want <= 0:
                break
            reply = await self.client.xautoclaim(
                self.stream,
                self.group,
                self.consumer,
                self.idle_ms,
                start_id=self.cursor,
                count=want,
            )
            self.cursor = str(reply[0])
            self._collect(found, reply)
            if self.cursor == "0-0":
                break
        await self._attach_counts(found)
        return found

    def _collect(self, found: Reclaimed, reply: list[object]) -> None:
        entries = reply[1] or []
        assert isinstance(entries, list)
        for entry_id, fields in entries:
            if entry_id is None:
                found.nil_payloads += 1
                continue
            found.deliveries.append(Delivery(str(entry_id), dict(fields or {}), reclaimed=True))
        if len(reply) > 2 and reply[2]:
            deleted = reply[2]
            assert isinstance(deleted, list)
            found.deleted_ids.extend(str(i) for i in deleted)

    async def _attach_counts(self, found: Reclaimed) -> None:
        counts = await delivery_counts(
            self.client, self.stream, self.group, [d.entry_id for d in found.deliveries]
        )
        for delivery in found.deliveries:
            # Missing: acked or deleted meanwhile; the gate and XACK cope with that.
            delivery.deliveries = counts.get(delivery.entry_id, delivery.deliveries)
        if found.nil_payloads:
            log.warning(
                "reclaim: %d pending entries have no payload (Redis 6.2 nil replies)",
                found.nil_payloads,
            )
