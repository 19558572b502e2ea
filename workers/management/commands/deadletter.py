"""``manage.py deadletter``: move pending entries to the dead letters, with a reason."""

from __future__ import annotations

from argparse import ArgumentParser
from typing import Any

from workers import operations
from workers.from_settings import action_args, engine_config
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
        "Dead-letter pending entries (written to <stream>:dead, then acked); entries acked, "
        "running or already done meanwhile are skipped. --reason is required."
        f" {NOTHING_DONE_HELP}"
    )

    def add_arguments(self, parser: ArgumentParser) -> None:
        parser.add_argument("ids", nargs="+", help="pending entry ids")
        parser.add_argument("--reason", required=True, help="why (kept in the audit record)")
        add_where(parser)
        add_output(parser, background=True)

    def handle(self, *args: Any, **options: Any) -> None:
        stream, group = where(options)
        actor, ids, reason = cli_actor(), options["ids"], options["reason"]
        self.perform(
            options,
            lambda: operations.dead_letter(
                actor,
                stream,
                group,
                ids,
                reason,
                options["dry_run"],
                **action_args(),
                home=engine_config().group,
            ),
        )
