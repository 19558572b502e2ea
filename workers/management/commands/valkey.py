"""``manage.py valkey start|stop|status``: the embedded Valkey server, by hand."""

from __future__ import annotations

from argparse import ArgumentParser
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from workers.core.errors import StreamdeskError
from workers.core.redact import redact_url
from workers.from_settings import data_dir
from workers.redis.embedded import EmbeddedValkey


class Command(BaseCommand):
    help = "Start, stop or show the embedded Valkey server used when REDIS_URL is not set."

    def add_arguments(self, parser: ArgumentParser) -> None:
        parser.add_argument("action", choices=["start", "stop", "status"])

    def handle(self, *args: Any, **options: Any) -> None:
        if settings.REDIS_URL:
            shown = redact_url(settings.REDIS_URL)
            self.stdout.write(f"REDIS_URL is set ({shown}): the embedded server is not used")
        server = EmbeddedValkey(data_dir())
        try:
            if options["action"] == "start":
                started = server.ensure_running()
                self.stdout.write(f"{'started' if started else 'already running'}: {server.url}")
            elif options["action"] == "stop":
                stopped = server.stop()
                self.stdout.write("stopped" if stopped else "not running")
            else:
                st = server.status()
                state = f"running (pid {st.pid})" if st.running else "not running"
                self.stdout.write(f"{state}: {st.url}, data in {st.data_dir}")
        except StreamdeskError as exc:
            raise CommandError(str(exc)) from exc
