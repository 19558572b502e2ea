"""``manage.py redrive``: put dead letters back on their stream."""

from __future__ import annotations

from argparse import ArgumentParser
from typing import Any

from workers import operations
from workers.from_settings import action_args, engine_config
from workers.management.actioncli import (
    NOTHING_DONE_HELP,
    ActionCommand,
    add_filter,
    add_output,
    add_where,
    cli_actor,
    dead_filter,
    where_each,
)


class Command(ActionCommand):
    help = (
        "Redrive dead letters (IDS, or --all / a filter) to the stream: each is published once "
        "with retry_of and deleted; an event that already ran is a gate hit, not a second run."
        f" {NOTHING_DONE_HELP}"
    )

    def add_arguments(self, parser: ArgumentParser) -> None:
        parser.add_argument("ids", nargs="*", help="dead-letter ids (in <stream>:dead)")
        add_filter(parser)
        parser.add_argument("--reason", default="", help="why (kept in the audit record)")
        add_where(parser, group=False)
        add_output(parser, background=True)

    def handle(self, *args: Any, **options: Any) -> None:
        actor, ids, f = cli_actor(), options["ids"] or None, dead_filter(options)
        self.perform_each(
            options,
            where_each(options),
            lambda stream: operations.redrive(
                actor,
                stream,
                ids,
                f,
                options["dry_run"],
                reason=options["reason"],
                **action_args(),
                home=engine_config().group,
            ),
        )
