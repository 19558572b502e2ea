"""``manage.py jobs``: list bulk jobs, cancel one, or run one here in the foreground."""

from __future__ import annotations

import json
from argparse import ArgumentParser
from typing import Any

from django.core.management.base import CommandError

from workers.core.errors import StreamdeskError
from workers.management.actioncli import ActionCommand, add_output, cli_actor, progress_line
from workers.models import BulkJob
from workers.operations import jobs


class Command(ActionCommand):
    help = (
        "List the newest bulk jobs; --cancel ID stops one (after its current batch); --run ID "
        "runs a queued or orphaned one here, with progress on stderr (Ctrl-C hands it back)."
    )

    def add_arguments(self, parser: ArgumentParser) -> None:
        action = parser.add_mutually_exclusive_group()
        action.add_argument("--cancel", type=int, metavar="ID", help="cancel job ID")
        action.add_argument("--run", type=int, metavar="ID", help="run job ID here")
        parser.add_argument("--limit", type=int, default=20, help="jobs listed (default 20)")
        add_output(parser, dry_run=False)

    def handle(self, *args: Any, **options: Any) -> None:
        if options["cancel"] is not None:
            job_id = options["cancel"]
            self.perform(options, lambda: jobs.cancel(cli_actor(), job_id))
        elif options["run"] is not None:
            try:
                outcome = self.run_job(options["run"])
            except StreamdeskError as exc:
                raise CommandError(str(exc)) from exc
            self.emit(outcome, options["json"])
        else:
            self.list(options["limit"], options["json"])

    def list(self, limit: int, as_json: bool) -> None:
        newest = list(BulkJob.objects.order_by("-created_at", "-pk")[: max(limit, 0)])
        if as_json:
            self.stdout.write(json.dumps([jobs.as_dict(j) for j in newest]))
            return
        for job in newest:
            by = f"by {job.created_by} ({job.door})"
            # The group says whose entries (one agent's, with several per event type).
            where = job.stream + (f" group {job.group}" if job.group else "")
            self.stdout.write(f"{job.status:<9} {progress_line(job)} on {where} {by}")
        if not newest:
            self.stdout.write("no bulk jobs")
