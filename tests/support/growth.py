"""Recorded history of a growing stream, written through the recorder's own script (as
the deployment's recorder writes it), for the Redis page's growing-stream warning."""

from __future__ import annotations

import redis

from workers.core.keys import Keys
from workers.monitor.history import HistoryStore

HOLDER = "test:growth:1"
MINUTE_MS = 60_000


def record_growth(
    r: redis.Redis, stream: str, start: int = 842, step: int = 130, keys: Keys | None = None
) -> None:
    """16 points a minute apart, the last one now: ``stream`` grew by ``step`` each minute.
    Complete points (every counter), so the overview's rates read them too."""
    keys = keys or Keys()
    store = HistoryStore(r, keys)
    seconds, micros = r.time()
    now = int(seconds) * 1000 + int(micros) // 1000
    r.set(keys.history_recorder, HOLDER, px=60_000)
    for i in range(16):
        fields = {"n": start + i * step, "a": start + i * step}
        fields |= {"p": 0, "f": 0, "d": 0, "h": 0, "r": 0, "g": {}}
        store.record({"t": now - (15 - i) * MINUTE_MS, "s": {stream: fields}}, HOLDER)
    r.delete(keys.history_recorder)
