"""``manage.py prune_timeline``: delete event timeline steps older than N days."""

from __future__ import annotations

from argparse import ArgumentParser
from datetime import timedelta
from typing import Any

from django.core.management.base import BaseCommand, CommandError

from workers.timeline import prune


class Command(BaseCommand):
    help = "Delete event timeline steps older than --older-than-days (run it daily, e.g. cron)."

    def add_arguments(self, parser: ArgumentParser) -> None:
        parser.add_argument(
            "--older-than-days",
            type=float,
            required=True,
            help="delete steps recorded more than this many days ago",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        days = options["older_than_days"]
        if days < 0:
            raise CommandError("--older-than-days must not be negative")
        deleted = prune(timedelta(days=days))
        self.stdout.write(f"deleted {deleted} timeline steps older than {days:g} days")
