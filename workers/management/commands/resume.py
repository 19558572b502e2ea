"""``manage.py resume``: a paused group's workers read again."""

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
    help = f"Resume a paused group: its workers read new entries again. {NOTHING_DONE_HELP}"

    def add_arguments(self, parser: ArgumentParser) -> None:
        add_where(parser)
        add_output(parser)

    def handle(self, *args: Any, **options: Any) -> None:
        stream, group = where(options, whole_stream=True)
        self.perform(
            options,
            lambda: operations.resume(
                cli_actor(), stream, group, dry_run=options["dry_run"], **action_args()
            ),
        )
