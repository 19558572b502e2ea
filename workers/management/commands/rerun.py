"""``manage.py rerun``: run a finished event once more, on purpose."""

from __future__ import annotations

from argparse import ArgumentParser
from typing import Any

from workers import operations
from workers.from_settings import action_args
from workers.management.actioncli import ActionCommand, add_output, cli_actor


class Command(ActionCommand):
    help = (
        "Force a re-run of a finished event: clear its gate record, mark its run failed and "
        "publish the original event again. The one deliberate second execution; --reason "
        "is required."
    )

    def add_arguments(self, parser: ArgumentParser) -> None:
        parser.add_argument("event_hash", help="the event's hash (64 hex digits)")
        parser.add_argument("--reason", required=True, help="why (kept in the audit record)")
        add_output(parser, dry_run=False)

    def handle(self, *args: Any, **options: Any) -> None:
        event_hash, reason = options["event_hash"], options["reason"]
        self.perform(
            options,
            lambda: operations.force_rerun(cli_actor(), event_hash, reason, **action_args()),
        )
