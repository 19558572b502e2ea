"""``manage.py metrics``: the Prometheus metrics on their own port, for deployments without
the console (docs/observability.md)."""

from __future__ import annotations

import errno
import signal
from argparse import ArgumentParser
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from workers.core.errors import StreamdeskError
from workers.from_settings import configured_streams, engine_config, rate_budgets, redis_client
from workers.monitor.exporter import PATH, MetricsApp, is_loopback, server
from workers.monitor.sample import Sample, collect
from workers.monitor.scrape_access import ScrapeAccess

DEFAULT_PORT = 9808


def read_sample() -> Sample:
    """One sample with the configured stream's partitions, even before they exist."""
    config = engine_config()
    return collect(redis_client(), config.keys, configured_streams(), budgets=rate_budgets())


class Command(BaseCommand):
    help = (
        "Serve the Prometheus metrics (the same as the console's /metrics) at "
        "http://BIND:PORT/metrics, reading one sample from Redis per scrape. Scrapes need "
        "STREAMDESK_METRICS_TOKEN or an address in STREAMDESK_METRICS_ALLOW; with neither, "
        "only loopback may scrape."
    )

    def add_arguments(self, parser: ArgumentParser) -> None:
        parser.add_argument(
            "--port", type=int, default=DEFAULT_PORT, help=f"TCP port (default {DEFAULT_PORT})"
        )
        parser.add_argument(
            "--bind", default="127.0.0.1", help="address to listen on (default 127.0.0.1)"
        )

    def handle(self, *args: Any, **options: Any) -> None:
        bind, port = str(options["bind"]), int(options["port"])
        try:
            access = ScrapeAccess.from_settings(
                settings.STREAMDESK_METRICS_TOKEN,
                settings.STREAMDESK_METRICS_ALLOW,
                # Bound to loopback with nothing configured: the host's own scraper may read.
                open_loopback=True,
            )
            config = engine_config()
        except StreamdeskError as exc:
            raise CommandError(str(exc)) from exc
        if not access.configured and not is_loopback(bind):
            raise CommandError(
                f"--bind {bind} would serve the metrics beyond this host, and nothing guards "
                "them: set STREAMDESK_METRICS_TOKEN or STREAMDESK_METRICS_ALLOW, or bind to "
                "127.0.0.1"
            )
        # The home group's name: each group's ``agent`` label (a named agent's group is
        # ``<home>:<name>``).
        app = MetricsApp(read_sample, config.claim_idle_ms, access, config.group)
        try:
            httpd = server(bind, port, app)
        except OSError as exc:
            if exc.errno == errno.EADDRINUSE:
                raise CommandError(f"port {port} on {bind} is taken: {exc.strerror}") from exc
            raise CommandError(f"cannot listen on {bind}:{port}: {exc}") from exc
        host = f"[{bind}]" if ":" in bind else bind
        self.stdout.write(f"serving metrics on http://{host}:{port}{PATH}")
        self.stdout.flush()
        # SIGTERM (a service manager's stop) ends it like Ctrl-C.
        signal.signal(signal.SIGTERM, signal.default_int_handler)
        try:
            httpd.serve_forever()
        except KeyboardInterrupt:
            pass
        finally:
            httpd.server_close()
