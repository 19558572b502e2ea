"""Retention: how far back each stream reaches, and the trim that keeps it there.

A stream keeps its entries after they are acknowledged (replay reads them), so without a
trim it grows for ever. ``STREAMDESK_RETENTION_S`` (a week by default) and
``STREAMDESK_MAX_LEN`` (no cap by default) say how much to keep (``policy.py``). One Lua
script (``lua/trim.lua``, run by ``trimmer.py``) trims a stream by age (``XTRIM MINID ~``)
and length (``XTRIM MAXLEN ~``), but never past the oldest entry any consumer group still
needs (its oldest pending entry, or its last delivered one), and records the trim in the
stream's retention hash, which the console and the metrics read (``record.py``).

Who trims: the workers, as one of the chores that ride on a group's reclaim sweep
(``workers/engine/housekeeping.py``, the engine's one seam: ``trim_turn``); the record's
next due time makes it one trim a minute per stream for the whole fleet. By hand:
``manage.py trim``.

May import ``workers.core`` and ``workers.redis``; never the engine, ``console`` nor Django.
"""

from __future__ import annotations

from workers.retention.policy import Retention
from workers.retention.record import TrimRecord, entry_ms, read_record
from workers.retention.trimmer import TRIM_EVERY_MS, Trim, trim, trim_turn

__all__ = [
    "TRIM_EVERY_MS",
    "Retention",
    "Trim",
    "TrimRecord",
    "entry_ms",
    "read_record",
    "trim",
    "trim_turn",
]
