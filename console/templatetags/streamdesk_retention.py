"""How far back a stream reaches, as the stream cards show it (workers/retention)."""

from __future__ import annotations

import time

from django import template

from console.params import moment_of_ms
from workers.retention import TrimRecord, entry_ms

register = template.Library()


@register.filter
def entry_age_ms(entry_id: str | None) -> int | None:
    """How long ago the entry was added, from its id (None without a usable one)."""
    ms = entry_ms(entry_id)
    return None if ms is None else max(int(time.time() * 1000) - ms, 0)


@register.filter
def entry_minute(entry_id: str | None) -> str:
    """When the entry was added, to the minute: ``2026-11-30 09:12 UTC``."""
    ms = entry_ms(entry_id)
    moment = moment_of_ms(ms) if ms else None
    return "" if moment is None else moment.strftime("%Y-%m-%d %H:%M UTC")


@register.filter
def retention_text(record: TrimRecord | None) -> str:
    """The retention the trimming workers use: ``keeps 7 d, at most 1,000,000 entries``."""
    return "" if record is None else record.retention.describe()
