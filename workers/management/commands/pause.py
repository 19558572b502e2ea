"""``manage.py pause``: workers of a group stop reading new entries."""

from __future__ import annotations

from argparse import ArgumentParser
from typing import Any

from workers import operations
from workers.from_settings import action_args
from workers.management.actioncli import (
    NOTHING_DONE_HELP,
    ActionCommand,
    add_output,
    add_where,
    cli_actor,
    where,
)


class Command(ActionCommand):
    help = (
        "Pause a group: its workers stop reading new entries within a second and finish what "
        "they hold (manage.py resume to undo)."
        f" {NOTHING_DONE_HELP}"
    )

    def add_arguments(self, parser: ArgumentParser) -> None:
        add_where(parser)
        add_output(parser)

    def handle(self, *args: Any, **options: Any) -> None:
        stream, group = where(options, whole_stream=True)
        self.perform(
            options,
            lambda: operations.pause(
                cli_actor(), stream, group, dry_run=options["dry_run"], **action_args()
            ),
        )
