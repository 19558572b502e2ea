"""``manage.py retry``: let any live worker reclaim pending entries now."""

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
        "Retry pending entries now: they look idle past the claim idle time, so the next "
        "reclaim by any live worker takes them (same entry, same event hash: the gate decides)."
        f" {NOTHING_DONE_HELP}"
    )

    def add_arguments(self, parser: ArgumentParser) -> None:
        parser.add_argument("ids", nargs="+", help="pending entry ids")
        add_where(parser)
        add_output(parser, background=True)

    def handle(self, *args: Any, **options: Any) -> None:
        stream, group = where(options)
        actor, ids = cli_actor(), options["ids"]
        self.perform(
            options,
            lambda: operations.retry_now(
                actor,
                stream,
                group,
                ids,
                options["dry_run"],
                **action_args(),
                claim_idle_ms=engine_config().claim_idle_ms,
                home=engine_config().group,
            ),
        )
