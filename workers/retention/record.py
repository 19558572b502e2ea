"""The stream's last trim, as the retention hash records it (``Keys.retention``): what the
console, ``manage.py streams`` and the metrics show. Parsing only: the sample reads the hash
in its own pipeline."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import redis

from workers.core.keys import Keys
from workers.retention.policy import Retention


@dataclass(frozen=True, slots=True)
class TrimRecord:
    at_ms: int
    by: str
    # The settings the trimming worker used (its environment: the one in force).
    retention: Retention
    trimmed: int  # entries the last trim removed
    trimmed_total: int  # entries trims have removed, ever
    cut: str  # the MINID it trimmed to ("" when age did not apply)
    held_by: str  # the group whose oldest needed entry held the trim back, else ""
    note: str  # why a setting was not applied, else ""

    @classmethod
    def parse(cls, fields: Any) -> TrimRecord | None:
        """From the hash's fields; None when there is none (never trimmed) or it is not a
        hash a trim wrote."""
        if not isinstance(fields, dict) or "at_ms" not in fields:
            return None
        try:
            return cls(
                at_ms=int(fields["at_ms"]),
                by=str(fields.get("by", "")),
                retention=Retention(
                    int(fields.get("retention_ms", 0)) // 1000, int(fields.get("max_len", 0))
                ),
                trimmed=int(fields.get("trimmed", 0)),
                trimmed_total=int(fields.get("trimmed_total", 0)),
                cut=str(fields.get("cut", "")),
                held_by=str(fields.get("held_by", "")),
                note=str(fields.get("note", "")),
            )
        except (TypeError, ValueError):
            return None


def read_record(client: redis.Redis, keys: Keys, stream: str) -> TrimRecord | None:
    return TrimRecord.parse(client.hgetall(keys.retention(stream)))


def entry_ms(entry_id: str | None) -> int | None:
    """The milliseconds part of a stream id (when it was added), None without one."""
    if not entry_id:
        return None
    head = str(entry_id).split("-", 1)[0]
    return int(head) if head.isdigit() else None
