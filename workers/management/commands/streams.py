"""``manage.py streams``: streams, groups (each with its agent and counters), lag, the
engine's counters and model usage."""

from __future__ import annotations

import json
from argparse import ArgumentParser
from dataclasses import asdict
from datetime import UTC, datetime
from typing import Any

import redis
from django.core.management.base import BaseCommand, CommandError

from workers.core.errors import StreamdeskError
from workers.core.fanout import agent_of
from workers.core.keys import Keys
from workers.from_settings import configured_streams, engine_config, redis_client
from workers.monitor.records import GroupInfo
from workers.monitor.sample import Sample, StreamInfo, collect
from workers.monitor.usage import UsageRow, usage_rows, usage_total, usd
from workers.redis import stats
from workers.retention import entry_ms
from workers.retention.policy import age_text

# Counters per group: (stream, group) -> counter -> value (workers/redis/stats.py).
GroupCounters = dict[tuple[str, str], dict[str, int]]
# How the home group's agent is shown (workers/core/fanout.py: the agents without a name).
HOME_LABEL = "home"


def group_counters(client: redis.Redis, keys: Keys, sample: Sample) -> GroupCounters:
    """Each group's own counters (``Keys.group_stats``), in one round trip. A value that is
    not a number (written by hand) is left out rather than failing the whole listing."""
    pairs = [(s.name, g.name) for s in sample.streams for g in s.groups]
    if not pairs:
        return {}
    with client.pipeline(transaction=False) as pipe:
        for stream, group in pairs:
            pipe.hgetall(keys.group_stats(stream, group))
        replies: list[Any] = pipe.execute()
    return {
        pair: {c: int(reply[c]) for c in stats.COUNTERS if str(reply.get(c, "")).isdigit()}
        for pair, reply in zip(pairs, replies, strict=True)
    }


def agent_label(home: str, group: str) -> str | None:
    """Whose group it is: an agent's name, ``home`` for the home group, None for a group
    that is none of this fleet's agents' (an operator's own reader)."""
    agent = agent_of(home, group)
    return HOME_LABEL if agent == "" else agent


def as_dict(
    sample: Sample, home: str = "", counters: GroupCounters | None = None
) -> dict[str, Any]:
    """One JSON object: each stream with its groups (each with its agent, "" for the home
    group's, null for none of ours, and its own counters), the engine's counters in total,
    then model usage (tokens and estimated cost) by event type and in total, as the
    console's."""
    counters = counters or {}
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
                        "agent": agent_of(home, g.name) if home else None,
                        "counters": counters.get((s.name, g.name), {}),
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


def render_text(sample: Sample, home: str = "", counters: GroupCounters | None = None) -> str:
    counters = counters or {}
    lines: list[str] = []
    for s in sample.streams:
        lines.append(f"{s.name}  length {s.length}  dead letters {s.dead_letters}")
        lines += reach_lines(sample, s)
        if s.error:
            lines.append(f"  this stream {s.error}")
        for g in s.groups:
            lines.append(group_line(g, home, counters.get((s.name, g.name), {})))
        if not s.groups:
            lines.append("  (no consumer group yet)")
    if not sample.streams:
        lines.append("no streams yet")
    engine = ", ".join(f"{k.replace('_', ' ')} {v}" for k, v in totals(sample).items())
    lines.append(f"engine: {engine}")
    lines += usage_lines(sample)
    return "\n".join(lines)


def group_line(g: GroupInfo, home: str, counts: dict[str, int]) -> str:
    """``group agents:triage (agent triage): 2 consumers, 0 pending, lag 0; processed 9``."""
    label = agent_label(home, g.name) if home else None
    whose = f" (agent {label})" if label else ""
    lag = "unknown" if g.lag is None else str(g.lag)
    line = f"  group {g.name}{whose}: {len(g.consumers)} consumers, {g.pending} pending, lag {lag}"
    own = ", ".join(f"{k.replace('_', ' ')} {v}" for k, v in counts.items() if v)
    return f"{line}; {own}" if own else line


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
        "agent ('home' for the home group's agents without a name), consumers, pending, lag "
        "and its own counters, "
        "the engine's counters and model usage (tokens, estimated cost) by event type."
    )

    def add_arguments(self, parser: ArgumentParser) -> None:
        parser.add_argument("--json", action="store_true", help="print one JSON object")

    def handle(self, *args: Any, **options: Any) -> None:
        config = engine_config()
        try:
            # The console's own reader: the same figures, from summaries only.
            client = redis_client()
            sample = collect(client, config.keys, configured_streams())
            counters = group_counters(client, config.keys, sample)
        except (StreamdeskError, redis.RedisError) as exc:
            raise CommandError(str(exc)) from exc
        if options["json"]:
            self.stdout.write(json.dumps(as_dict(sample, config.group, counters)))
        else:
            self.stdout.write(render_text(sample, config.group, counters))
