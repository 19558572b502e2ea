"""``manage.py answer``: approve or reject a run waiting for an event."""

from __future__ import annotations

from argparse import ArgumentParser
from typing import Any

from django.core.management.base import CommandError

from workers import operations
from workers.core.errors import ActionRefused, InvalidAction
from workers.core.registry import default_registry
from workers.from_settings import action_args, engine_config, stream_partitions
from workers.management.actioncli import ActionCommand, add_output, add_run_agent, cli_actor, run_of

# Exit status of an answer refused: no such wait, a sleep, a wait that already ended.
REFUSED = 2


class Command(ActionCommand):
    help = (
        "Answer a run waiting for an event (ctx.wait_for_event): publish the event it waits "
        "for, of its type, with the subject and data its match names, plus data.approved "
        "(--approve: true, --reject: false), data.by and data.comment. A worker that reads "
        "it resumes the run. One answer per wait: answering again before a worker read it "
        "publishes the same event (a duplicate). Audited. Exits 2 when there is no such "
        "wait, it is a sleep (cancel it instead: manage.py cancel) or it already ended. "
        "'manage.py waits' lists the waiting runs."
    )

    def add_arguments(self, parser: ArgumentParser) -> None:
        parser.add_argument(
            "event_hash",
            help="the waiting run's hash (64 hex digits; for an agent without a name, the event's)",
        )
        decision = parser.add_mutually_exclusive_group(required=True)
        decision.add_argument("--approve", action="store_true", help="answer approved=true")
        decision.add_argument("--reject", action="store_true", help="answer approved=false")
        parser.add_argument("--comment", default="", help="data.comment (kept in the audit too)")
        parser.add_argument(
            "--by", default="", help="data.by: who decided (default: cli:<user>@<host>)"
        )
        parser.add_argument(
            "--stream",
            help="the stream the run waits on (default: the engine's, STREAMDESK_STREAM; "
            "a partitioned stream's partitions are searched)",
        )
        add_run_agent(parser)
        add_output(parser, dry_run=False)

    def handle(self, *args: Any, **options: Any) -> None:
        streams = stream_partitions(options["stream"] or engine_config().stream)
        try:
            run = run_of(options["event_hash"], options.get("agent"))
            self.perform(
                options,
                lambda: operations.answer(
                    cli_actor(),
                    run,
                    bool(options["approve"]),
                    options["comment"],
                    by=options["by"],
                    streams=streams,
                    registry=default_registry,
                    **action_args(),
                ),
            )
        except CommandError as exc:
            if isinstance(exc.__cause__, ActionRefused | InvalidAction):
                raise CommandError(str(exc), returncode=REFUSED) from exc.__cause__
            raise
