"""``manage.py up``: everything ``make run`` starts, kept running until one Ctrl-C.

A child that dies is restarted with a back-off (workers/supervisor.py); the others go on.
"""

from __future__ import annotations

import secrets
import signal
import sys
from argparse import ArgumentParser
from types import FrameType
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from workers.embedded import EmbeddedValkey
from workers.errors import StreamdeskError
from workers.redact import redact_url
from workers.runtime import data_dir, redis_url
from workers.supervisor import Child, Supervisor

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
        "Start the Redis server if needed, workers, the console (daphne) and, in demo mode, a "
        "demo producer; restart any that dies; Ctrl-C stops them all."
    )

    def add_arguments(self, parser: ArgumentParser) -> None:
        parser.add_argument("--workers", type=int, default=2, help="runworker processes")
        parser.add_argument("--rate", type=float, default=2.0, help="demo events per second")
        parser.add_argument(
            "--no-demo",
            action="store_true",
            help="do not start the demo producer (it runs only in demo mode, STREAMDESK_DEMO=1)",
        )
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
        stopping = False

        def stop(signum: int, frame: FrameType | None) -> None:
            nonlocal stopping
            stopping = True

        # Before the first child starts: a Ctrl-C from now on stops every one of them.
        signal.signal(signal.SIGINT, stop)
        signal.signal(signal.SIGTERM, stop)
        supervisor = Supervisor(self._children(options), say=self.stderr.write)
        supervisor.start_all()
        self._banner(url, started_redis, supervisor.children, options, password)
        supervisor.run(lambda: stopping)
        supervisor.stop_all(STOP_TIMEOUT_S)
        self.stdout.write("all processes stopped")
        if started_redis and embedded is not None:
            embedded.stop()
            self.stdout.write("stopped the embedded Valkey server (data kept in .streamdesk/)")

    def _children(self, options: dict[str, Any]) -> list[Child]:
        manage = [sys.executable, "manage.py"]
        # The first worker also relays the outbox (the demo's tickets go through it).
        children = [
            Child(f"worker-{i + 1}", [*manage, "runworker", *(["--relay"] if i == 0 else [])])
            for i in range(options["workers"])
        ]
        if not options["no_console"]:
            daphne = [sys.executable, "-m", "daphne", "-b", "127.0.0.1", "-p", str(options["port"])]
            children.append(Child("console", [*daphne, "console.asgi:application"]))
        if settings.STREAMDESK_DEMO and not options["no_demo"]:
            producer = [*manage, "demoproducer", "--rate", str(options["rate"])]
            children.append(Child("demo producer", producer))
        return children

    def _banner(
        self,
        url: str,
        started: bool,
        children: list[Child],
        options: dict[str, Any],
        password: str | None,
    ) -> None:
        where = "embedded Valkey, started now" if started else "already running"
        lines = [
            "",
            "Streamdesk is running:",
            f"  redis      {redact_url(url)} ({where if not settings.REDIS_URL else 'REDIS_URL'})",
            f"  database   {settings.DATABASES['default']['NAME']}",
        ]
        lines += [f"  {c.name:<10} pid {c.proc.pid}" for c in children if c.proc is not None]
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
        lines += [""]
        if settings.STREAMDESK_DEMO:
            # Other terminals must be in the same mode to see the demo types.
            lines += ["  elsewhere:  export DEBUG=1 STREAMDESK_DEMO=1 (the mode make run uses)"]
        lines += ["  watch it:   python manage.py streams"]
        if settings.STREAMDESK_DEMO:
            lines += [
                '  publish:    python manage.py publish demo.echo --data \'{"hello": "world"}\''
            ]
        lines += ["  A process that dies is restarted; Ctrl-C stops everything started here.", ""]
        self.stdout.write("\n".join(lines))
