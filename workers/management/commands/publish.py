"""``manage.py publish``: publish typed events from the command line."""

from __future__ import annotations

from argparse import ArgumentParser
from datetime import UTC, datetime
from typing import Any

from django.core.management.base import BaseCommand, CommandError

from workers.core import keys
from workers.core.errors import StreamdeskError
from workers.core.events import strict_loads
from workers.from_settings import partitions, redis_client, start_embedded
from workers.producers.publish import (
    build_envelope,
    hold_envelopes,
    partition_of,
    publish_envelopes,
)
from workers.redis.replication import Durability
from workers.timers import Due, due_time


def json_object(text: str, flag: str) -> dict[str, Any]:
    try:
        value = strict_loads(text)
    except ValueError as exc:
        raise CommandError(f"{flag} is not valid JSON: {exc}") from exc
    if not isinstance(value, dict):
        raise CommandError(f"{flag} must be a JSON object, got {type(value).__name__}")
    return value


def when(delay: float | None, at: str | None) -> Due:
    """``--delay`` / ``--at`` as a due time; a bad one is a CommandError, before anything is
    written."""
    try:
        moment = datetime.fromisoformat(at) if at is not None else None
    except ValueError:
        raise CommandError(f"--at {at!r} is not an ISO-8601 time") from None
    if moment is not None and moment.tzinfo is None:
        raise CommandError(f"--at {at!r} needs its offset, e.g. {at}Z or {at}+00:00")
    try:
        return due_time(delay, moment)
    except StreamdeskError as exc:
        raise CommandError(str(exc).replace("delay_s", "--delay")) from exc


def held(envelopes: list[Any], due_ms: list[int]) -> list[str]:
    """One line per held event: its id and when it is due (UTC)."""
    return [
        f"{e.id} due {datetime.fromtimestamp(ms / 1000, UTC).isoformat(timespec='milliseconds')}"
        for e, ms in zip(envelopes, due_ms, strict=True)
    ]


class Command(BaseCommand):
    help = "Publish events of TYPE to a stream; prints one stream entry id per line."

    def add_arguments(self, parser: ArgumentParser) -> None:
        parser.add_argument("type", help="event type, e.g. demo.echo")
        parser.add_argument("--data", default="{}", help="the event's data, a JSON object")
        parser.add_argument("--context", help="context for the agent, a JSON object")
        parser.add_argument("--source", default="cli", help="producer name (default cli)")
        parser.add_argument("--subject", help="the entity the event is about")
        parser.add_argument("--id", help="event id (default: a new UUID per event)")
        parser.add_argument("--key", help="explicit idempotency key")
        parser.add_argument(
            "--partition-key",
            help="what picks the partition when STREAMDESK_PARTITIONS > 1 (default: the "
            "subject, else the event's idempotency hash); events with one key keep their order",
        )
        parser.add_argument("--count", type=int, default=1, help="events to publish (default 1)")
        parser.add_argument("--stream", default=keys.DEFAULT_STREAM, help="target stream")
        parser.add_argument(
            "--durable",
            action="store_true",
            help="return only once a replica holds the events (WAIT 1, up to 2 s); "
            "exit 1 if none confirmed them",
        )
        when = parser.add_mutually_exclusive_group()
        when.add_argument(
            "--delay",
            type=float,
            metavar="SECONDS",
            help="hold the events this many seconds (by the Redis server's clock) before they "
            "enter the stream, within 1 s of due and exactly once; prints each event's id and "
            "due time instead of an entry id (docs/timers.md)",
        )
        when.add_argument(
            "--at",
            metavar="ISO-8601",
            help="hold the events until this time, with its offset, e.g. "
            "2026-12-24T18:00:00+01:00 or ...Z; a past time publishes at once",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        if options["count"] < 1:
            raise CommandError("--count must be at least 1")
        due = when(options["delay"], options["at"])
        data = json_object(options["data"], "--data")
        context = json_object(options["context"], "--context") if options["context"] else None
        try:
            envelopes = [
                build_envelope(
                    options["type"],
                    data,
                    source=options["source"],
                    id=options["id"],
                    subject=options["subject"],
                    context=context,
                    key=options["key"],
                )
                for _ in range(options["count"])
            ]
            started = start_embedded()
            if started:  # the first command to need it says so; later ones find it running
                self.stderr.write(f"started the embedded Valkey at {started} (no REDIS_URL set)")
            durability = Durability() if options["durable"] else None
            client = redis_client()
            layout = partitions(options["stream"], client)
            key = options["partition_key"]
            if not due.now:
                due_ms = hold_envelopes(client, layout, envelopes, due, durability, key)
                self.stdout.write("\n".join(held(envelopes, due_ms)))
                return
            ids = publish_envelopes(client, layout, envelopes, durability, key)
        except StreamdeskError as exc:
            raise CommandError(str(exc)) from exc
        if layout.single:
            self.stdout.write("\n".join(ids))
        else:  # an id names an entry only together with its partition
            where = [partition_of(layout, e, key) for e in envelopes]
            self.stdout.write("\n".join(f"{s} {i}" for s, i in zip(where, ids, strict=True)))
