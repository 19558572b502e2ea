"""``manage.py cancel``: cancel an event's run, running or waiting."""

from __future__ import annotations

from argparse import ArgumentParser
from typing import Any

from django.core.management.base import CommandError

from workers import operations
from workers.core.errors import ActionRefused, InvalidAction
from workers.from_settings import action_args
from workers.management.actioncli import ActionCommand, add_output, cli_actor

# Exit status of a cancel refused: an unknown event hash, or a run that already finished.
REFUSED = 2


class Command(ActionCommand):
    help = (
        "Cancel an event's run. Running: its worker is told at once; an async agent is "
        "cancelled (CancelledError), a sync agent sees ctx.cancelled and the run ends when "
        "its thread returns. Waiting (pending, not running): its entries are acked here. "
        "Either way the run ends 'cancelled', its entry leaves the pending list and no copy "
        "of the event runs again (a force re-run still may). Audited. Exits 2 for an unknown "
        "event hash or a run that already finished."
    )

    def add_arguments(self, parser: ArgumentParser) -> None:
        parser.add_argument("event_hash", help="the event's hash (64 hex digits)")
        parser.add_argument("--reason", default="", help="why (kept in the audit record)")
        add_output(parser, dry_run=False)

    def handle(self, *args: Any, **options: Any) -> None:
        event_hash, reason = options["event_hash"], options["reason"]
        try:
            self.perform(
                options,
                lambda: operations.cancel(cli_actor(), event_hash, reason, **action_args()),
            )
        except CommandError as exc:
            if isinstance(exc.__cause__, ActionRefused | InvalidAction):
                raise CommandError(str(exc), returncode=REFUSED) from exc.__cause__
            raise
