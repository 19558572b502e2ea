"""``manage.py up``: everything ``make run`` starts, under one Ctrl-C."""

from __future__ import annotations

import secrets
import signal
import subprocess
import sys
import time
from argparse import ArgumentParser
from types import FrameType
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from workers.embedded import EmbeddedValkey
from workers.errors import StreamdeskError
from workers.runtime import data_dir, redis_url

STOP_TIMEOUT_S = 40.0


def ensure_admin() -> str | None:
    """Create ``admin`` with a random password if no superuser exists; return the password."""
    from django.contrib.auth import get_user_model

    users = get_user_model()
    if (
        users.objects.filter(is_superuser=True).exists()
        or users.objects.filter(username="admin").exists()
    ):
        return None
    password = secrets.token_urlsafe(12)
    users.objects.create_superuser("admin", "", password)
    return password


class Command(BaseCommand):
    help = (
        "Start the Redis server if needed, workers, the console (daphne) and a demo producer; "
        "Ctrl-C stops them all."
    )

    def add_arguments(self, parser: ArgumentParser) -> None:
        parser.add_argument("--workers", type=int, default=2, help="runworker processes")
        parser.add_argument("--rate", type=float, default=2.0, help="demo events per second")
        parser.add_argument("--no-demo", action="store_true", help="do not start the producer")
        parser.add_argument("--port", type=int, default=8000, help="console port (daphne)")
        parser.add_argument("--no-console", action="store_true", help="do not start the console")

    def handle(self, *args: Any, **options: Any) -> None:
        embedded = None if settings.REDIS_URL else EmbeddedValkey(data_dir())
        try:
            started_redis = embedded.ensure_running() if embedded else False
            url = redis_url()
        except StreamdeskError as exc:
            raise CommandError(str(exc)) from exc
        password = None if options["no_console"] else ensure_admin()
        procs = self._spawn(options)
        self._banner(url, started_redis, procs, options, password)
        stopping = False

        def stop(signum: int, frame: FrameType | None) -> None:
            nonlocal stopping
            stopping = True

        signal.signal(signal.SIGINT, stop)
        signal.signal(signal.SIGTERM, stop)
        while not stopping:
            dead = [(name, p) for name, p in procs if p.poll() is not None]
            if dead:
                name, proc = dead[0]
                self.stderr.write(f"{name} exited with code {proc.returncode}; stopping the rest")
                break
            time.sleep(0.2)
        self._stop(procs)
        if started_redis and embedded is not None:
            embedded.stop()
            self.stdout.write("stopped the embedded Valkey server (data kept in .streamdesk/)")

    def _spawn(self, options: dict[str, Any]) -> list[tuple[str, subprocess.Popen[bytes]]]:
        manage = [sys.executable, "manage.py"]
        # The first worker also relays the outbox (the demo's tickets go through it).
        procs = [
            (
                f"worker-{i + 1}",
                subprocess.Popen([*manage, "runworker", *(["--relay"] if i == 0 else [])]),
            )
            for i in range(options["workers"])
        ]
        if not options["no_console"]:
            daphne = [sys.executable, "-m", "daphne", "-b", "127.0.0.1", "-p", str(options["port"])]
            procs.append(("console", subprocess.Popen([*daphne, "console.asgi:application"])))
        if not options["no_demo"]:
            producer = [*manage, "demoproducer", "--rate", str(options["rate"])]
            procs.append(("demo producer", subprocess.Popen(producer)))
        return procs

    def _banner(
        self,
        url: str,
        started: bool,
        procs: list[tuple[str, subprocess.Popen[bytes]]],
        options: dict[str, Any],
        password: str | None,
    ) -> None:
        where = "embedded Valkey, started now" if started else "already running"
        lines = [
            "",
            "Streamdesk is running:",
            f"  redis      {url} ({where if not settings.REDIS_URL else 'REDIS_URL'})",
            f"  database   {settings.DATABASES['default']['NAME']}",
        ]
        lines += [f"  {name:<10} pid {p.pid}" for name, p in procs]
        if not options["no_console"]:
            lines += ["", f"  console:    http://127.0.0.1:{options['port']}/"]
            if password:
                lines += [
                    f"  sign in:    admin / {password}",
                    "              (shown once; to change it: manage.py changepassword admin)",
                ]
            else:
                lines += [
                    "  sign in:    with your staff account (python manage.py createsuperuser)"
                ]
        lines += [
            "",
            "  watch it:   python manage.py streams",
            '  publish:    python manage.py publish demo.echo --data \'{"hello": "world"}\'',
            "  Ctrl-C stops everything started here.",
            "",
        ]
        self.stdout.write("\n".join(lines))

    def _stop(self, procs: list[tuple[str, subprocess.Popen[bytes]]]) -> None:
        for _, proc in procs:
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + STOP_TIMEOUT_S
        for name, proc in procs:
            try:
                proc.wait(timeout=max(deadline - time.monotonic(), 0.1))
            except subprocess.TimeoutExpired:
                self.stderr.write(f"{name} did not stop in time; killing it")
                proc.kill()
        self.stdout.write("all processes stopped")
