"""``manage.py rerun``: run a finished event once more, on purpose."""

from __future__ import annotations

from argparse import ArgumentParser
from typing import Any

from workers import operations
from workers.from_settings import action_args, engine_config
from workers.management.actioncli import ActionCommand, add_output, add_run_agent, cli_actor, run_of


class Command(ActionCommand):
    help = (
        "Force a re-run of a finished event: clear its gate record, mark its run failed and "
        "publish the original event again. The one deliberate second execution; --reason "
        "is required."
    )

    def add_arguments(self, parser: ArgumentParser) -> None:
        parser.add_argument(
            "event_hash",
            help="the run's hash (64 hex digits; for an agent without a name, the event's)",
        )
        parser.add_argument("--reason", required=True, help="why (kept in the audit record)")
        add_run_agent(parser)
        add_output(parser, dry_run=False)

    def handle(self, *args: Any, **options: Any) -> None:
        reason, home = options["reason"], engine_config().group
        event_hash = run_of(options["event_hash"], options.get("agent"))
        self.perform(
            options,
            lambda: operations.force_rerun(
                cli_actor(), event_hash, reason, **action_args(), home=home
            ),
        )
