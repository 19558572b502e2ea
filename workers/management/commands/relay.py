"""``manage.py relay``: publish the transactional outbox's rows to their streams."""

from __future__ import annotations

import os
import signal
import threading
from argparse import ArgumentParser
from typing import Any

from django.core.management.base import BaseCommand, CommandError

from workers.core.errors import StreamdeskError
from workers.from_settings import redis_client
from workers.producers.relay import Relay, RelayConfig

# Tests only: sleep between XADD and marking rows sent (see tests/e2e/test_outbox_relay.py).
PAUSE_ENV = "STREAMDESK_RELAY_PAUSE_AFTER_XADD_S"


def relay_config(batch_size: int | None = None) -> RelayConfig:
    try:
        pause_s = float(os.environ.get(PAUSE_ENV) or 0)
    except ValueError:
        raise CommandError(f"{PAUSE_ENV} must be a number of seconds") from None
    if batch_size is not None:
        return RelayConfig(batch_size=batch_size, pause_after_xadd_s=pause_s)
    return RelayConfig(pause_after_xadd_s=pause_s)


class Command(BaseCommand):
    help = (
        "Move committed outbox rows to their streams in id order, then mark them sent. "
        "Stops on SIGTERM/SIGINT after the batch in hand."
    )

    def add_arguments(self, parser: ArgumentParser) -> None:
        parser.add_argument("--batch-size", type=int, help="rows per batch (default 500)")
        parser.add_argument("--once", action="store_true", help="send what is there now, then exit")

    def handle(self, *args: Any, **options: Any) -> None:
        relay = Relay(redis_client(), relay_config(options["batch_size"]))
        try:
            if options["once"]:
                while relay.run_once():
                    pass
            else:
                stop = threading.Event()
                for sig in (signal.SIGTERM, signal.SIGINT):
                    signal.signal(sig, lambda *_: stop.set())
                self.stdout.write("relay started", ending="\n")
                self.stdout.flush()
                relay.run_forever(stop)
        except StreamdeskError as exc:
            raise CommandError(str(exc)) from exc
        self.stdout.write(f"relay sent {relay.sent} event(s)")
