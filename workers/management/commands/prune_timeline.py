"""``manage.py prune_timeline``: delete event timeline steps older than N days, and the stored
steps and graph checkpoints of events that succeeded before then."""

from __future__ import annotations

from argparse import ArgumentParser
from datetime import timedelta
from typing import Any

from django.core.management.base import BaseCommand, CommandError

from workers.store.durable_steps import prune_succeeded
from workers.store.timeline_rows import prune


class Command(BaseCommand):
    help = (
        "Delete event timeline steps older than --older-than-days, and the durable steps and "
        "graph checkpoints of events that succeeded before then (run it daily, e.g. cron)."
    )

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
        stored = prune_succeeded(timedelta(days=days))
        self.stdout.write(
            f"deleted {deleted} timeline steps older than {days:g} days and {stored} stored "
            "steps and checkpoints of events that succeeded before then"
        )
