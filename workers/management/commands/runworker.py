"""``manage.py runworker``: run agents on a stream's events, exactly once per event."""

from __future__ import annotations

import dataclasses
import functools
import sys
import threading
from argparse import ArgumentParser, ArgumentTypeError
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from workers.core.errors import StreamdeskError
from workers.core.keys import Keys
from workers.core.registry import default_registry
from workers.engine.processes import run_processes, usable_cpus
from workers.engine.serve import exit_past_lingering_threads, run, serve
from workers.fanout import select
from workers.from_settings import (
    engine_config,
    llm_config,
    rate_budgets,
    redis_url,
    schedules,
    worker_redis_client,
)
from workers.management.commands.relay import relay_config
from workers.monitor.recorder import RecorderThread, start_recorder
from workers.producers.publish import scheduled_entry
from workers.producers.relay import Relay
from workers.redis.connection import is_cluster
from workers.redis.consumer_names import claim_consumer_name
from workers.redis.listener import Handler
from workers.store.runs import DjangoRunStore
from workers.timers import Relayed, TimerThread, start_timer


def processes_arg(value: str) -> int:
    """``--processes``: a count of at least 1, or ``auto`` (the CPUs this process may use)."""
    if value == "auto":
        return usable_cpus()
    try:
        count = int(value)
    except ValueError:
        raise ArgumentTypeError(f"expected a number or 'auto', got {value!r}") from None
    if count < 1:
        raise ArgumentTypeError(f"expected at least 1, got {count}")
    return count


def unapplied_migrations() -> int:
    executor = MigrationExecutor(connection)
    try:
        return len(executor.migration_plan(executor.loader.graph.leaf_nodes()))
    finally:
        # The check's connection belongs to this thread, which never queries again: at rest
        # the worker holds no database connection (the writer thread opens its own on use).
        connection.close()


def start_timers(keys: Keys) -> tuple[TimerThread, dict[str, Handler]]:
    """This process's candidate for the fleet's timer (delayed events, schedules:
    docs/timers.md), and the handler the worker's pub/sub listener relays the timer's
    channel to (on a cluster, whose listener subscribes to nothing, the candidate
    subscribes itself). Every schedule's event is built once first, so a bad one (an
    unknown type, data its schema refuses) stops the worker at start, not at its first tick."""
    declared = schedules()
    client = worker_redis_client()
    for one in declared:
        scheduled_entry(client, one, 0)
    relayed = None if is_cluster(client) else Relayed()
    timer = start_timer(
        worker_redis_client,
        keys,
        declared,
        functools.partial(scheduled_entry, client),
        wakeups=relayed,
    )
    return timer, ({keys.timers_channel: relayed} if relayed is not None else {})


class Command(BaseCommand):
    help = (
        "Run Streamdesk agents on events from a Redis stream through a consumer group. "
        "Stops cleanly on SIGTERM/SIGINT after in-flight agents finish, or after the drain "
        "timeout whatever they do."
    )

    def add_arguments(self, parser: ArgumentParser) -> None:
        parser.add_argument("--stream", help="stream to read (default streamdesk:events)")
        parser.add_argument("--group", help="consumer group (default agents)")
        parser.add_argument(
            "--consumer",
            help="consumer name (default <host>-<n>: the lowest slot of this host no live "
            "worker holds, so a restarted worker takes its old name back)",
        )
        parser.add_argument("--concurrency", type=int, help="agents run at once (default 16)")
        parser.add_argument("--batch-size", type=int, help="entries read per call (default 100)")
        parser.add_argument(
            "--burst",
            action="store_true",
            help="exit 0 once nothing is new and nothing is pending for the group",
        )
        parser.add_argument(
            "--max-deliveries",
            type=int,
            help="deliveries before an event is dead-lettered (default 5)",
        )
        parser.add_argument(
            "--claim-idle-ms",
            type=int,
            help="idle time after which another worker reclaims an entry (default 60000)",
        )
        parser.add_argument("--lease-ms", type=int, help="gate lease (default 30000)")
        parser.add_argument(
            "--drain-timeout",
            type=float,
            dest="drain_timeout_s",
            help="seconds to let in-flight agents finish on shutdown (default 30)",
        )
        parser.add_argument(
            "--relay",
            action="store_true",
            help="also publish the transactional outbox's rows (manage.py relay), in a thread",
        )
        parser.add_argument(
            "--no-history-recorder",
            action="store_true",
            help=(
                "run no candidate for the console's history recorder in this process (one "
                "records for the whole deployment; with --processes only the first child runs "
                "one); STREAMDESK_HISTORY_RECORDER=0 does the same"
            ),
        )
        parser.add_argument(
            "--agent",
            action="append",
            metavar="NAME",
            help=(
                "run only this agent (repeatable; default: every agent). A named agent "
                "reads its own group; an agent without a name is named by its event type "
                "and runs in the home group with every other agent without a name"
            ),
        )
        parser.add_argument(
            "--processes",
            type=processes_arg,
            default=1,
            metavar="N|auto",
            help=(
                "worker processes under one supervisor, each its own consumer, restarted if it "
                "dies (default 1; auto = the CPU count)"
            ),
        )

    def handle(self, *args: Any, **options: Any) -> None:
        agents: list[str] = options["agent"] or []
        try:
            select(default_registry, agents)  # an unknown name stops here, before anything
        except StreamdeskError as exc:
            raise CommandError(str(exc)) from exc
        unapplied = unapplied_migrations()
        if unapplied:
            raise CommandError(
                f"the database has {unapplied} unapplied migration(s): run "
                "`python manage.py migrate` first (workers record every run there)"
            )
        overrides = {
            name: options[name]
            for name in (
                "stream",
                "group",
                "consumer",
                "concurrency",
                "batch_size",
                "max_deliveries",
                "claim_idle_ms",
                "lease_ms",
                "drain_timeout_s",
            )
        }
        overrides["burst"] = options["burst"] or None
        if options["processes"] > 1:
            self.supervise(options, overrides, agents)
            return
        older_threads = set(threading.enumerate())
        stop_relay = threading.Event()
        relay = self.start_relay(stop_relay) if options["relay"] else None
        recorder: RecorderThread | None = None
        timer: TimerThread | None = None
        try:
            config = engine_config(**overrides)
            if not options["consumer"]:
                # <host>-<n>, the lowest free: a restart takes its old name back.
                name = claim_consumer_name(worker_redis_client(), config.keys)
                config = dataclasses.replace(config, consumer=name)
            timer, channels = start_timers(config.keys)
            if settings.STREAMDESK_HISTORY_RECORDER and not options["no_history_recorder"]:
                # A candidate history recorder (one records for the whole deployment): the
                # console's charts fill whether or not a browser is open.
                recorder = start_recorder(worker_redis_client, config.keys, "runworker")
            run(
                serve(
                    config,
                    redis_url(),
                    default_registry,
                    DjangoRunStore(),
                    rate_budgets(),
                    llm_config(),
                    channels,
                    agents,
                )
            )
        except StreamdeskError as exc:
            raise CommandError(str(exc)) from exc
        finally:
            # The worker has stopped (a signal, or --burst found nothing): so does the relay.
            stop_relay.set()
            if relay is not None:
                relay.join()
            if recorder is not None:
                recorder.stop()
            if timer is not None:
                timer.stop()
            # Last: an agent's thread past the drain timeout must not hold the process.
            exit_past_lingering_threads(sys.exc_info()[1], older_threads)

    def supervise(
        self, options: dict[str, Any], overrides: dict[str, Any], agents: list[str]
    ) -> None:
        config = engine_config(**overrides)  # checked here once, not N times in children
        passed = {k: v for k, v in overrides.items() if v is not None and k != "burst"}
        code = run_processes(
            options["processes"],
            passed | ({"agent": agents} if agents else {}),
            burst=bool(options["burst"]),
            relay=bool(options["relay"]),
            recorder=not options["no_history_recorder"],
            drain_timeout_s=config.drain_timeout_s,
            settings_module=settings.SETTINGS_MODULE,
        )
        if code:
            raise CommandError("a worker process kept failing (see above)", returncode=code)

    def start_relay(self, stop: threading.Event) -> threading.Thread:
        relay = Relay(worker_redis_client(), relay_config())
        thread = threading.Thread(target=relay.run_forever, args=(stop,), name="relay")
        thread.start()
        return thread
