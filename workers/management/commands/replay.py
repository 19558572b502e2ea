"""``manage.py replay``: feed a range of the stream back to one agent (docs/replay.md)."""

from __future__ import annotations

from argparse import ArgumentParser
from typing import Any

from django.core.management.base import CommandError

from workers import replay
from workers.core.errors import InvalidAction
from workers.core.registry import default_registry
from workers.from_settings import engine_config, redis_client, stream_partitions
from workers.management.actioncli import NOTHING_DONE_HELP, ActionCommand, add_output, cli_actor


class Command(ActionCommand):
    help = (
        "Replay a range of the stream into one agent: each event of its type in range is "
        "copied back for that agent alone, and the command returns once every copy is in "
        "the stream (a runworker runs them). Without --force, events the agent already did "
        "are skipped; with it, each runs once more as a new run linked to the old one. "
        f"{NOTHING_DONE_HELP}"
    )
    job_batch = replay.BATCH

    def add_arguments(self, parser: ArgumentParser) -> None:
        parser.add_argument(
            "--agent", required=True, help="the agent's name (a type's only agent: the type)"
        )
        bound = "an entry id (<ms>-<seq>, or <ms>) or an ISO 8601 time (UTC unless it says)"
        parser.add_argument("--from", dest="start", help=f"first entry: {bound}; default oldest")
        parser.add_argument("--to", dest="end", help=f"last entry: {bound}; default newest")
        parser.add_argument("--type", default="", help="only this event type (the agent's)")
        parser.add_argument("--subject", default="", help="only events about this subject")
        parser.add_argument(
            "--force", action="store_true", help="run events the agent already did once more"
        )
        parser.add_argument("--reason", default="", help="why (kept in the audit record)")
        parser.add_argument("--stream", help="the stream (default: the engine's)")
        add_output(parser, background=True)

    def handle(self, *args: Any, **options: Any) -> None:
        config = engine_config()
        stream = options["stream"] or config.stream
        try:
            plan = replay.plan(
                default_registry,
                config.group,
                options["agent"],
                stream_partitions(stream),
                start=options["start"],
                end=options["end"],
                event_type=options["type"],
                subject=options["subject"],
                force=options["force"],
            )
        except InvalidAction as exc:
            raise CommandError(str(exc)) from exc
        self.perform(
            options,
            lambda: replay.replay(
                cli_actor(),
                plan,
                dry_run=options["dry_run"],
                reason=options["reason"],
                client=redis_client(),
            ),
        )
