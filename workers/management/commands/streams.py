"""``manage.py streams``: streams, groups, lag and the engine's counters."""

from __future__ import annotations

import json
from argparse import ArgumentParser
from typing import Any

from django.core.management.base import BaseCommand, CommandError

from workers.errors import StreamdeskError
from workers.runtime import engine_config, redis_client
from workers.status import Snapshot, snapshot


def render_text(snap: Snapshot) -> str:
    lines: list[str] = []
    for s in snap.streams:
        lines.append(f"{s.name}  length {s.length}  dead letters {s.dead_letters}")
        for g in s.groups:
            lag = "unknown" if g.lag is None else str(g.lag)
            lines.append(
                f"  group {g.name}: {g.consumers} consumers, {g.pending} pending, lag {lag}"
            )
        if not s.groups:
            lines.append("  (no consumer group yet)")
    if not snap.streams:
        lines.append("no streams yet")
    counters = ", ".join(f"{k.replace('_', ' ')} {v}" for k, v in snap.counters.items())
    lines.append(f"engine: {counters}")
    return "\n".join(lines)


class Command(BaseCommand):
    help = "Show each stream's length and dead letters, each group's consumers, pending and lag."

    def add_arguments(self, parser: ArgumentParser) -> None:
        parser.add_argument("--json", action="store_true", help="print one JSON object")

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            config = engine_config()
            snap = snapshot(redis_client(), config.keys, [config.stream])
        except StreamdeskError as exc:
            raise CommandError(str(exc)) from exc
        if options["json"]:
            self.stdout.write(json.dumps(snap.as_dict()))
        else:
            self.stdout.write(render_text(snap))
