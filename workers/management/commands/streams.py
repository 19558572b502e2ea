"""``manage.py streams``: streams, groups, lag, the engine's counters and model usage."""

from __future__ import annotations

import json
from argparse import ArgumentParser
from dataclasses import asdict
from datetime import UTC, datetime
from typing import Any

from django.core.management.base import BaseCommand, CommandError

from workers.core.errors import StreamdeskError
from workers.from_settings import configured_streams, engine_config, redis_client
from workers.monitor.sample import Sample, StreamInfo, collect
from workers.monitor.usage import UsageRow, usage_rows, usage_total, usd
from workers.redis import stats
from workers.retention import entry_ms
from workers.retention.policy import age_text


def as_dict(sample: Sample) -> dict[str, Any]:
    """One JSON object: each stream with its groups, the engine's counters in total, then
    model usage (tokens and estimated cost) by event type and in total, as the console's."""
    out: dict[str, Any] = {
        "streams": [
            {
                "name": s.name,
                "length": s.length,
                "dead_letters": s.dead_letters,
                "first_id": s.first_id,
                "retention": asdict(s.trim) if s.trim else None,
                "groups": [
                    {
                        "name": g.name,
                        "consumers": len(g.consumers),
                        "pending": g.pending,
                        "lag": g.lag,
                    }
                    for g in s.groups
                ],
            }
            for s in sample.streams
        ]
    }
    out.update(totals(sample))
    rows = usage_rows(sample.usage)
    out["usage"] = {
        "by_type": [asdict(r) for r in rows],
        "total": {k: v for k, v in asdict(usage_total(rows)).items() if k != "event_type"},
    }
    return out


def totals(sample: Sample) -> dict[str, int]:
    return {c: sum(s.counters.get(c, 0) for s in sample.streams) for c in stats.COUNTERS}


def render_text(sample: Sample) -> str:
    lines: list[str] = []
    for s in sample.streams:
        lines.append(f"{s.name}  length {s.length}  dead letters {s.dead_letters}")
        lines += reach_lines(sample, s)
        if s.error:
            lines.append(f"  this stream {s.error}")
        for g in s.groups:
            lag = "unknown" if g.lag is None else str(g.lag)
            lines.append(
                f"  group {g.name}: {len(g.consumers)} consumers, {g.pending} pending, lag {lag}"
            )
        if not s.groups:
            lines.append("  (no consumer group yet)")
    if not sample.streams:
        lines.append("no streams yet")
    counters = ", ".join(f"{k.replace('_', ' ')} {v}" for k, v in totals(sample).items())
    lines.append(f"engine: {counters}")
    lines += usage_lines(sample)
    return "\n".join(lines)


def reach_lines(sample: Sample, s: StreamInfo) -> list[str]:
    """How far back the stream reaches and its last trim by retention (workers/retention)."""
    first_ms = entry_ms(s.first_id)
    if first_ms is None:
        return []
    when = datetime.fromtimestamp(first_ms / 1000, tz=UTC).strftime("%Y-%m-%d %H:%M UTC")
    lines = [f"  oldest entry {when} ({age_text((sample.at_ms - first_ms) / 1000)} ago)"]
    t = s.trim
    if t is None:
        return [*lines, "  retention: not trimmed yet (workers trim once a minute)"]
    trim = f"last trim {age_text((sample.at_ms - t.at_ms) / 1000)} ago by {t.by}: {t.trimmed:,}"
    held = f", held back by group {t.held_by}" if t.held_by else ""
    note = f"; {t.note}" if t.note else ""
    return [*lines, f"  retention: {t.retention.describe()}; {trim} entries{held}{note}"]


def usage_lines(sample: Sample) -> list[str]:
    """Model usage in total, then by event type (the most expensive first)."""
    rows = usage_rows(sample.usage)
    if not rows:
        return ["model usage: no model calls recorded yet"]
    return [f"model usage: {_usage(usage_total(rows))}"] + [
        f"  {r.event_type}: {_usage(r)}" for r in rows
    ]


def _usage(r: UsageRow) -> str:
    return (
        f"{r.calls:,} calls, {r.prompt_tokens:,} prompt tokens, "
        f"{r.completion_tokens:,} completion tokens, {usd(r.cost_usd)} estimated"
    )


class Command(BaseCommand):
    help = (
        "Show each stream's length, dead letters, oldest entry and retention, each group's "
        "consumers, pending and lag, "
        "the engine's counters and model usage (tokens, estimated cost) by event type."
    )

    def add_arguments(self, parser: ArgumentParser) -> None:
        parser.add_argument("--json", action="store_true", help="print one JSON object")

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            # The console's own reader: the same figures, from summaries only.
            sample = collect(redis_client(), engine_config().keys, configured_streams())
        except StreamdeskError as exc:
            raise CommandError(str(exc)) from exc
        if options["json"]:
            self.stdout.write(json.dumps(as_dict(sample)))
        else:
            self.stdout.write(render_text(sample))
