"""``manage.py cancel``: cancel an event's run, running or waiting."""

from __future__ import annotations

from argparse import ArgumentParser
from typing import Any

from django.core.management.base import CommandError

from workers import operations
from workers.core.errors import ActionRefused, InvalidAction
from workers.from_settings import action_args, engine_config
from workers.management.actioncli import ActionCommand, add_output, add_run_agent, cli_actor, run_of

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
        parser.add_argument(
            "event_hash",
            help="the run's hash (64 hex digits; for an agent without a name, the event's)",
        )
        parser.add_argument("--reason", default="", help="why (kept in the audit record)")
        add_run_agent(parser)
        add_output(parser, dry_run=False)

    def handle(self, *args: Any, **options: Any) -> None:
        reason, home = options["reason"], engine_config().group
        try:
            event_hash = run_of(options["event_hash"], options.get("agent"))
            self.perform(
                options,
                lambda: operations.cancel(
                    cli_actor(), event_hash, reason, **action_args(), home=home
                ),
            )
        except CommandError as exc:
            if isinstance(exc.__cause__, ActionRefused | InvalidAction):
                raise CommandError(str(exc), returncode=REFUSED) from exc.__cause__
            raise
