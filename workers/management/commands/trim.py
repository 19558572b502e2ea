"""``manage.py trim``: trim a stream by its retention now, as the workers do once a minute."""

from __future__ import annotations

import json
from argparse import ArgumentParser
from dataclasses import asdict
from datetime import UTC, datetime
from typing import Any

import redis
from django.core.management.base import BaseCommand, CommandError

from workers.core.errors import StreamdeskError
from workers.from_settings import engine_config, redis_client, stream_partitions
from workers.retention import Retention, Trim, entry_ms, trim

WHY = {
    "missing": "no such stream",
    "no-group": "no consumer group reads it: nothing is trimmed until one has",
    "off": "nothing to trim by: STREAMDESK_RETENTION_S and STREAMDESK_MAX_LEN are both 0",
}


def describe(stream: str, done: Trim, dry_run: bool) -> str:
    if done.status != "trimmed":
        return f"{stream}: {WHY.get(done.status, done.status)}"
    verb = "would trim" if dry_run else "trimmed"
    parts = [f"{stream}: {verb} {done.trimmed:,} entries"]
    if dry_run and done.cut:
        parts[0] += " (up to; a trim takes whole nodes of entries only)"
    if done.cut:
        cut_ms = entry_ms(done.cut)
        parts.append(f"older than {done.cut}" + (f" ({_utc(cut_ms)})" if cut_ms else ""))
    if done.max_len:
        parts.append(f"beyond the newest {done.max_len:,}")
    if done.held_by:
        parts.append(f"held back by group {done.held_by} (it still needs {done.bound})")
    if done.note:
        parts.append(done.note)
    return "; ".join(parts)


def _utc(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, tz=UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


class Command(BaseCommand):
    help = (
        "Trim a stream by its retention now (STREAMDESK_RETENTION_S, STREAMDESK_MAX_LEN), as "
        "the workers do once a minute: entries older than the retention, or beyond the length "
        "cap, go, never one a consumer group has not read and acknowledged. A partitioned "
        "stream's partitions are each trimmed. Dead letters are never trimmed."
    )

    def add_arguments(self, parser: ArgumentParser) -> None:
        parser.add_argument(
            "--stream", help="the stream (default: the engine's, STREAMDESK_STREAM)"
        )
        parser.add_argument(
            "--dry-run", action="store_true", help="trim nothing; say what would go and why"
        )
        parser.add_argument("--json", action="store_true", help="print one JSON object")

    def handle(self, *args: Any, **options: Any) -> None:
        config = engine_config()
        retention = Retention.of(config)
        stream = options["stream"] or config.stream
        if not stream or stream.endswith(":dead"):
            raise CommandError(f"{stream!r} is not a stream workers consume: nothing to trim")
        dry_run = options["dry_run"]
        done: dict[str, Trim] = {}
        try:
            for one in stream_partitions(stream):
                done[one] = trim(
                    redis_client(),
                    config.keys,
                    one,
                    retention,
                    by="manage.py trim",
                    dry_run=dry_run,
                )
        except (StreamdeskError, redis.RedisError) as exc:
            raise CommandError(f"cannot trim {stream}: {exc}") from exc
        if all(t.status == "missing" for t in done.values()):
            raise CommandError(f"no such stream: {stream}")
        if options["json"]:
            out = {"retention": asdict(retention), "dry_run": dry_run}
            out["streams"] = {name: asdict(t) for name, t in done.items()}
            self.stdout.write(json.dumps(out))
            return
        self.stdout.write(f"retention: {retention.describe()}")
        for name, t in done.items():
            self.stdout.write(describe(name, t, dry_run))
