"""``manage.py claim``: move pending entries to another consumer, or remove a consumer."""

from __future__ import annotations

from argparse import ArgumentParser
from typing import Any

from django.core.management.base import CommandError

from workers import operations
from workers.core.errors import NotAClaimTarget
from workers.from_settings import action_args
from workers.management.actioncli import (
    NOTHING_DONE_HELP,
    ActionCommand,
    add_output,
    add_where,
    cli_actor,
    where,
)
from workers.redis.consumers import Target


class Command(ActionCommand):
    help = (
        "Claim pending entries (IDS, or --all-of CONSUMER) to --to CONSUMER, delivery counts "
        "unchanged; --to must be a live consumer (runworker heartbeat) or one the group has "
        "already, unless --create. Or --remove-consumer NAME (refused while it holds pending "
        f"entries). {NOTHING_DONE_HELP}"
    )

    def add_arguments(self, parser: ArgumentParser) -> None:
        parser.add_argument("ids", nargs="*", help="pending entry ids")
        parser.add_argument("--to", help="the consumer that takes the entries")
        parser.add_argument(
            "--create",
            action="store_true",
            help="let --to be a consumer the group does not have yet and no runworker uses "
            "(it is created only if something is claimed; nothing runs its entries until a "
            "worker reclaims them)",
        )
        parser.add_argument("--all-of", metavar="CONSUMER", help="every entry this one holds")
        parser.add_argument(
            "--remove-consumer", metavar="NAME", help="delete a consumer with nothing pending"
        )
        add_where(parser)
        add_output(parser, background=True)

    def handle(self, *args: Any, **options: Any) -> None:
        stream, group = where(options)
        actor, dry_run = cli_actor(), options["dry_run"]
        ids, source, to = options["ids"], options["all_of"], options["to"] or ""
        target = Target.ANY if options["create"] else Target.KNOWN
        if options["remove_consumer"]:
            if ids or source:
                raise CommandError("--remove-consumer takes no ids and no --all-of")
            name = options["remove_consumer"]
            self.perform(
                options,
                lambda: operations.remove_consumer(actor, stream, group, name, **action_args()),
            )
        elif source:
            if ids:
                raise CommandError("give ids or --all-of, not both")
            self.perform(
                options,
                lambda: operations.claim_all(
                    actor, stream, group, source, to, dry_run, target=target, **action_args()
                ),
            )
        else:
            self.perform(
                options,
                lambda: operations.claim(
                    actor, stream, group, ids, to, dry_run, target=target, **action_args()
                ),
            )

    def explain(self, exc: Exception) -> str:
        if isinstance(exc, NotAClaimTarget):
            return f"{exc}; --create claims to it anyway"
        return super().explain(exc)
