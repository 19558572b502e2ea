"""``manage.py errors``: the dead letters' error groups; retry or purge one whole group."""

from __future__ import annotations

import json
from argparse import ArgumentParser
from datetime import UTC, datetime
from typing import Any

from django.core.management.base import CommandError

from workers import operations
from workers.core.errors import InvalidAction
from workers.from_settings import action_args, engine_config, redis_client, stream_partitions
from workers.management.actioncli import NOTHING_DONE_HELP, ActionCommand, cli_actor
from workers.operations.error_groups import fingerprint as checked
from workers.redis.error_groups import ErrorGroup, backfill, read_groups, unfingerprinted
from workers.redis.stats import known_streams

# A malformed fingerprint is a usage error, as argparse's own.
USAGE = 2


class Command(ActionCommand):
    help = (
        "List the dead letters' error groups (fingerprint, letters, first and last seen, "
        "type, message, top frame), largest first; or retry (--retry FINGERPRINT) or purge "
        "(--purge FINGERPRINT --reason ...) every letter of one group as a bulk job, run here "
        "with progress on stderr unless --background; or --backfill the letters written "
        f"before fingerprints. Exits 2 for a malformed fingerprint. {NOTHING_DONE_HELP}"
    )

    def add_arguments(self, parser: ArgumentParser) -> None:
        act = parser.add_mutually_exclusive_group()
        act.add_argument("--retry", metavar="FINGERPRINT", help="redrive the group's letters")
        act.add_argument("--purge", metavar="FINGERPRINT", help="delete the group's letters")
        act.add_argument(
            "--backfill", action="store_true", help="group letters that have no fingerprint"
        )
        parser.add_argument("--reason", default="", help="why (required with --purge; audited)")
        parser.add_argument(
            "--stream", help="the stream (default: every stream; a group's own for an action)"
        )
        parser.add_argument("--background", action="store_true", help="only queue the job")
        parser.add_argument("--json", action="store_true", help="print JSON")

    def handle(self, *args: Any, **options: Any) -> None:
        client = redis_client()
        streams = self._streams(options, client)
        if options["backfill"]:
            self._backfill(client, streams)
        elif options["retry"] or options["purge"]:
            self._act(options, client, streams)
        else:
            self._list(client, streams, options["json"])

    def _streams(self, options: dict[str, Any], client: Any) -> list[str]:
        if options["stream"]:
            return stream_partitions(options["stream"])
        return known_streams(client, engine_config().keys) or [engine_config().stream]

    def _list(self, client: Any, streams: list[str], as_json: bool) -> None:
        groups = read_groups(client, engine_config().keys, streams)
        for g in groups:
            self.stdout.write(json.dumps(_as_dict(g)) if as_json else _line(g))
        if not as_json:
            missing = unfingerprinted(client, streams, groups)
            letters = sum(g.count for g in groups)
            self.stdout.write(f"{_many(len(groups), 'group')}, {_many(letters, 'letter')}")
            if missing:
                self.stdout.write(f"{_many(missing, 'letter')} without a fingerprint: --backfill")

    def _act(self, options: dict[str, Any], client: Any, streams: list[str]) -> None:
        try:
            fp = checked(options["retry"] or options["purge"])
        except InvalidAction as exc:
            raise CommandError(str(exc), returncode=USAGE) from exc
        groups = read_groups(client, engine_config().keys, streams)
        held = [g.stream for g in groups if g.fingerprint == fp] or streams[:1]
        if len(held) > 1:
            raise CommandError(f"{fp} is a group on {', '.join(held)}: name one with --stream")
        actor, reason = cli_actor(), options["reason"]
        act = operations.retry_group if options["retry"] else operations.purge_group
        self.perform(options, lambda: act(actor, held[0], fp, reason=reason, **action_args()))

    def _backfill(self, client: Any, streams: list[str]) -> None:
        keys = engine_config().keys
        for stream in streams:
            added, cursor = 0, "-"
            while True:  # bounded batches: never one long call on the server
                n, after = backfill(client, keys, stream, cursor)
                added += n
                if after is None:
                    break
                cursor = after
            self.stdout.write(f"{stream}: {_many(added, 'letter')} joined their groups")


def _many(n: int, noun: str) -> str:
    return f"{n} {noun}{'' if n == 1 else 's'}"


def _when(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, UTC).strftime("%Y-%m-%d %H:%M:%S")


def _line(g: ErrorGroup) -> str:
    where = f" at {g.frame}" if g.frame else ""
    types = ", ".join(sorted(g.types))
    return (
        f"{g.fingerprint}  {g.count:>7}  {_when(g.first_ms)} .. {_when(g.last_ms)}  {g.stream}  "
        f"[{types}]  {g.kind}: {g.message}{where}"
    )


def _as_dict(g: ErrorGroup) -> dict[str, Any]:
    return {
        "fingerprint": g.fingerprint, "stream": g.stream, "count": g.count, "seen": g.seen,
        "first_ms": g.first_ms, "last_ms": g.last_ms, "kind": g.kind, "message": g.message,
        "frame": g.frame, "sample": g.sample, "error": g.error, "types": g.types,
        "groups": g.groups,
    }  # fmt: skip
