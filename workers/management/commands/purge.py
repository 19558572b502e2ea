"""``manage.py purge``: delete dead letters for good, with a reason."""

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
        "Delete dead letters (IDS, or --all / a filter) for good. --reason is required. "
        f"{NOTHING_DONE_HELP}"
    )

    def add_arguments(self, parser: ArgumentParser) -> None:
        parser.add_argument("ids", nargs="*", help="dead-letter ids (in <stream>:dead)")
        add_filter(parser)
        parser.add_argument("--reason", required=True, help="why (kept in the audit record)")
        add_where(parser, group=False)
        add_output(parser, background=True)

    def handle(self, *args: Any, **options: Any) -> None:
        actor, ids, f = cli_actor(), options["ids"] or None, dead_filter(options)
        self.perform_each(
            options,
            where_each(options),
            lambda stream: operations.purge(
                actor,
                stream,
                ids,
                f,
                reason=options["reason"],
                dry_run=options["dry_run"],
                **action_args(),
                home=engine_config().group,
            ),
        )
