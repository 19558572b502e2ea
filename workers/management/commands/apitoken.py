"""``manage.py apitoken``: create, list and revoke API tokens."""

from __future__ import annotations

from argparse import ArgumentParser
from typing import Any

from django.core.management.base import BaseCommand, CommandError

from workers.core.errors import StreamdeskError
from workers.management.actioncli import cli_actor
from workers.operations import tokens


class Command(BaseCommand):
    help = (
        "API tokens for /api/: 'create USERNAME --name N' prints a new token once (only its "
        "SHA-256 is stored), 'list' shows them by prefix, 'revoke PREFIX' deletes one."
    )

    def add_arguments(self, parser: ArgumentParser) -> None:
        sub = parser.add_subparsers(dest="subcommand", required=True)
        create = sub.add_parser("create", help="a new token for a user (printed once)")
        create.add_argument("username")
        create.add_argument("--name", required=True, help="what uses it, e.g. deploy-script")
        sub.add_parser("list", help="every token: prefix, user, name, last used")
        revoke = sub.add_parser("revoke", help="delete the token with this prefix")
        revoke.add_argument("prefix", help="the token's first 8 characters (apitoken list)")

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            match options["subcommand"]:
                case "create":
                    token, row = tokens.create(cli_actor(), options["username"], options["name"])
                    self.stdout.write(token)
                    self.stderr.write(
                        f"token {row.prefix}… for {row.user}: shown once, store it now"
                    )
                case "list":
                    self.list()
                case "revoke":
                    row = tokens.revoke(cli_actor(), options["prefix"])
                    self.stdout.write(f"revoked {row.prefix}… ({row.name}) of {row.user}")
        except StreamdeskError as exc:
            raise CommandError(str(exc)) from exc

    def list(self) -> None:
        rows = tokens.listing()
        for t in rows:
            used = f"{t.last_used_at:%Y-%m-%d %H:%M}" if t.last_used_at else "never used"
            self.stdout.write(
                f"{t.prefix}  {t.user}  {t.name}  created {t.created_at:%Y-%m-%d}, {used}"
            )
        if not rows:
            self.stdout.write("no API tokens")
