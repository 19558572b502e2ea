"""Where the engine writes down when a held-back entry is due, so the console can say so.

A retry's backoff, a rate budget's wait and a duplicate's wait for its twin's lease are all
kept the same way: the entry's idle time is set so that XAUTOCLAIM finds it when the wait is
over. That is exact for the engine but unreadable for a person: an entry published 2 s ago
shows "idle 59 s". Each of those writes also records ``due`` here, in the same pipeline, and
the console reads it beside XPENDING (one ZSCORE or ZMSCORE, no extra round trip).
"""

from __future__ import annotations

import time
from collections.abc import Iterable

from redis.asyncio.client import Pipeline

from workers.core.keys import Keys

# A due time older than this is of no use to anyone (the entry was taken long ago): trimmed
# on every write, so the set holds the waits of the last minute and those still ahead.
KEEP_PAST_MS = 60_000
# The set lives a day past its last write (longer if a wait is longer), so a removed group
# leaves nothing behind for good.
TTL_MS = 24 * 3600 * 1000


def now_ms() -> int:
    return int(time.time() * 1000)


def queue_waits(
    pipe: Pipeline, keys: Keys, stream: str, group: str, ids: Iterable[str], wait_ms: float
) -> None:
    """Record that ``ids`` are held back for ``wait_ms`` from now."""
    now = now_ms()
    due = now + max(int(wait_ms), 0)
    mapping = dict.fromkeys(ids, due)
    if not mapping:
        return
    key = keys.waits(stream, group)
    pipe.zadd(key, mapping)
    pipe.zremrangebyscore(key, "-inf", now - KEEP_PAST_MS)
    pipe.pexpire(key, max(TTL_MS, due - now + TTL_MS))
