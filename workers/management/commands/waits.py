"""``manage.py waits``: the runs waiting on a stream (``ctx.wait_for_event``, ``ctx.sleep``),
newest first."""

from __future__ import annotations

import json
from argparse import ArgumentParser
from datetime import UTC, datetime
from typing import Any

import redis
from django.core.management.base import BaseCommand, CommandError

from workers.core.errors import StreamdeskError
from workers.core.fanout import agent_of
from workers.from_settings import engine_config, redis_client, stream_partitions
from workers.waits import view
from workers.waits.view import MAX_PAGE_SIZE, WaitView


def _at(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def render(wait: WaitView, home: str = "") -> str:
    until = f"until {_at(wait.until_ms)}" if wait.until_ms else "no timeout"
    # A named agent's run says whose it is (its hash is that agent's run of the event).
    agent = agent_of(home, wait.group) if home else None
    whose = f" agent {agent}" if agent else ""
    return (
        f"{wait.event_hash}  {wait.run_type}{whose} ({wait.step})  waits for {wait.waits_for}  "
        f"since {_at(wait.since_ms)}, {until}"
    )


class Command(BaseCommand):
    help = (
        "List the runs waiting on a stream, newest first: each run's event hash, what it "
        "waits for (an event's type and match, or a sleep), since when and until when. "
        "Answer one with 'manage.py answer EVENT_HASH --approve' (or --reject); cancel one "
        "with 'manage.py cancel EVENT_HASH'. docs/waits.md says how a run comes to wait."
    )

    def add_arguments(self, parser: ArgumentParser) -> None:
        parser.add_argument(
            "--stream",
            help="the stream (default: the engine's, STREAMDESK_STREAM; a partitioned "
            "stream's partitions, each listed)",
        )
        parser.add_argument(
            "--limit",
            type=int,
            default=50,
            help=f"list at most this many per stream (1 to {MAX_PAGE_SIZE}; default 50)",
        )
        parser.add_argument(
            "--json", action="store_true", help="print one JSON object: total and waits"
        )

    def handle(self, *args: Any, **options: Any) -> None:
        limit = options["limit"]
        if not 1 <= limit <= MAX_PAGE_SIZE:
            raise CommandError(f"--limit: {limit} is not between 1 and {MAX_PAGE_SIZE}")
        stream = options["stream"] or engine_config().stream
        try:
            client = redis_client()
            pages = [
                view.page(client, engine_config().keys, s, limit=limit)
                for s in stream_partitions(stream)
            ]
        except (StreamdeskError, redis.RedisError) as exc:
            raise CommandError(f"cannot read the waits of {stream}: {exc}") from exc
        total = sum(p.total for p in pages)
        if options["json"]:
            waits = [w.as_dict() for p in pages for w in p.waits]
            self.stdout.write(json.dumps({"stream": stream, "total": total, "waits": waits}))
            return
        self.stdout.write(f"{total} run{'s' if total != 1 else ''} waiting on {stream}")
        for p in pages:
            for wait in p.waits:
                self.stdout.write(render(wait, engine_config().group))
            if p.has_next:
                self.stdout.write(f"... and {p.total - p.limit} more on {p.stream} (--limit)")
