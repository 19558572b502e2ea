"""Taking over entries that idle (dead or failed) consumers left pending."""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field

from redis.asyncio import Redis

from workers.redis.bus import Delivery

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
    # Of ``deliveries``, those held back on purpose and now due (a failure's backoff, a
    # busy duplicate's recheck): retries, not entries taken over from a dead consumer.
    retried: int = 0


class Reclaimer:
    """Walks the group's PEL with XAUTOCLAIM, a bounded slice per tick, keeping its cursor."""

    def __init__(self, client: Redis, stream: str, group: str, consumer: str, idle_ms: int) -> None:
        self.client = client
        self.stream = stream
        self.group = group
        self.consumer = consumer
        self.idle_ms = idle_ms
        self.cursor = "0-0"

    async def claim(self, count: int, waits_key: str = "") -> Reclaimed:
        """Up to ``count`` entries idle past the claim idle time; ``waits_key``
        (``keys.waits``) tells the retries among them apart."""
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
        await self._attach_counts(found, waits_key)
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

    async def _attach_counts(self, found: Reclaimed, waits_key: str) -> None:
        """Each entry's delivery count (XPENDING per id) and, in the same round trip, whether
        it was held back on purpose (its due time in ``waits_key``, within a claim idle time:
        an entry a dead consumer left idled a claim idle time past any due time it had)."""
        ids = [d.entry_id for d in found.deliveries]
        if ids:
            async with self.client.pipeline(transaction=False) as pipe:
                for entry_id in ids:
                    pipe.xpending_range(
                        self.stream, self.group, min=entry_id, max=entry_id, count=1
                    )
                if waits_key:
                    pipe.zmscore(waits_key, ids)
                replies = await pipe.execute()
            dues = replies.pop() if waits_key else [None] * len(ids)
            since_ms = time.time() * 1000 - self.idle_ms
            for delivery, rows, due in zip(found.deliveries, replies, dues, strict=True):
                # No row: acked or deleted meanwhile; the gate and XACK cope with that.
                if rows:
                    delivery.deliveries = int(rows[0]["times_delivered"])
                if due is not None and float(due) > since_ms:
                    delivery.retry = True
                    found.retried += 1
        if found.nil_payloads:
            log.warning(
                "reclaim: %d pending entries have no payload (Redis 6.2 nil replies)",
                found.nil_payloads,
            )
