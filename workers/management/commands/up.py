"""``manage.py up``: everything ``make run`` starts, kept running until one Ctrl-C.

A child that dies is restarted with a back-off (workers/engine/supervisor.py); the others go on.
"""

from __future__ import annotations

import os
import secrets
import signal
import sys
from argparse import ArgumentParser
from dataclasses import dataclass
from pathlib import Path
from types import FrameType
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from workers.core.config import env_bool
from workers.core.errors import StreamdeskError
from workers.core.redact import redact_url
from workers.engine.supervisor import Child, Supervisor
from workers.from_settings import data_dir, redis_url
from workers.redis.datadir import FILE_MODE, private_dir
from workers.redis.embedded import EmbeddedValkey, valkey_binary

STOP_TIMEOUT_S = 40.0


ADMIN = "admin"
# Where the first start leaves admin's password: in the terminal it scrolls away under the logs.
PASSWORD_FILE = "admin-password"


@dataclass(frozen=True, slots=True)
class Admin:
    """What the banner says about signing in."""

    created: bool  # made by this start
    exists: bool  # an ``admin`` user exists (made now or before)
    password_file: Path | None  # holds admin's current password, if it does


def write_password(path: Path, password: str) -> None:
    """The password in ``path``, readable by its owner only, whatever was there before."""
    private_dir(path.parent)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, FILE_MODE)
    with os.fdopen(fd, "w") as handle:
        os.fchmod(handle.fileno(), FILE_MODE)  # a file left by an older version is tightened
        handle.write(password + "\n")


def ensure_admin(folder: Path) -> Admin:
    """Create ``admin`` with a random password, kept in ``folder``, if no superuser exists."""
    from django.contrib.auth import get_user_model

    users = get_user_model()
    path = folder / PASSWORD_FILE
    admin = users.objects.filter(username=ADMIN).first()
    if admin is None and not users.objects.filter(is_superuser=True).exists():
        password = secrets.token_urlsafe(12)
        write_password(path, password)
        users.objects.create_superuser(ADMIN, "", password)
        return Admin(created=True, exists=True, password_file=path)
    if admin is None:
        return Admin(created=False, exists=False, password_file=None)
    # A file from an earlier start is named only while it still holds admin's password.
    current = path.exists() and admin.check_password(path.read_text().strip())
    return Admin(created=False, exists=True, password_file=path if current else None)


def shown(path: Path) -> str:
    """``path`` relative to the current folder when it is under it, as a person types it."""
    try:
        return str(path.resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(path)


def sign_in_lines(admin: Admin) -> list[str]:
    if not admin.exists:
        return ["  sign in:    with your staff account (python manage.py createsuperuser)"]
    reset = f"python manage.py changepassword {ADMIN}"
    if admin.created and admin.password_file:
        where = shown(admin.password_file)
        return [
            f"  sign in:    {ADMIN}, password in {where} (readable by you only)",
            f"              cat {where}; to change it: {reset}",
        ]
    lines = [f"  sign in:    {ADMIN} (the user exists already)"]
    if admin.password_file:
        lines += [f"              its password: cat {shown(admin.password_file)}"]
    return [*lines, f"              to reset its password: {reset}"]


class Command(BaseCommand):
    help = (
        "Start the Redis server if needed, workers, the console (daphne) and, in demo mode, a "
        "demo producer; restart any that dies; Ctrl-C stops them all."
    )

    def add_arguments(self, parser: ArgumentParser) -> None:
        parser.add_argument(
            "--workers",
            type=int,
            default=2,
            help="worker processes, run as one runworker --processes N (default 2; 0: none)",
        )
        parser.add_argument("--rate", type=float, default=2.0, help="demo events per second")
        parser.add_argument(
            "--no-demo",
            action="store_true",
            help="do not start the demo producer (it runs only in demo mode, STREAMDESK_DEMO=1)",
        )
        parser.add_argument("--port", type=int, default=8000, help="console port (daphne)")
        parser.add_argument("--no-console", action="store_true", help="do not start the console")
        parser.add_argument(
            "--access-log",
            action="store_true",
            default=env_bool("ACCESS_LOG", False),
            help="log every HTTP request of the console (default: off; ACCESS_LOG=1 turns it on)",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        embedded = None if settings.REDIS_URL else EmbeddedValkey(data_dir())
        try:
            started_redis = embedded.ensure_running() if embedded else False
            url = redis_url()
        except StreamdeskError as exc:
            raise CommandError(str(exc)) from exc
        admin = None if options["no_console"] else ensure_admin(data_dir())
        stopping = False

        def stop(signum: int, frame: FrameType | None) -> None:
            nonlocal stopping
            stopping = True

        # Before the first child starts: a Ctrl-C from now on stops every one of them.
        signal.signal(signal.SIGINT, stop)
        signal.signal(signal.SIGTERM, stop)
        supervisor = Supervisor(self._children(options), say=self.stderr.write)
        supervisor.start_all()
        self._banner(url, started_redis, supervisor.children, options, admin)
        supervisor.run(lambda: stopping)
        supervisor.stop_all(STOP_TIMEOUT_S)
        self.stdout.write("all processes stopped")
        if started_redis and embedded is not None:
            embedded.stop()
            where = shown(data_dir())
            self.stdout.write(f"stopped the embedded Valkey server (data kept in {where}/)")

    def _children(self, options: dict[str, Any]) -> list[Child]:
        manage = [sys.executable, "manage.py"]
        children = []
        if options["workers"]:
            # runworker --processes supervises its own children (worker-1, worker-2...); the
            # first also relays the outbox (the demo's tickets go through it).
            processes = ["--processes", str(options["workers"]), "--relay"]
            children.append(Child("workers", [*manage, "runworker", *processes]))
        if not options["no_console"]:
            daphne = [sys.executable, "-m", "daphne", "-b", "127.0.0.1", "-p", str(options["port"])]
            # Daphne's access log is a line per request (every page, fragment and asset): off
            # unless asked for; verbosity 0 turns only it off, the app's logging is Django's.
            daphne += ["--access-log", "-"] if options["access_log"] else ["-v", "0"]
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
        admin: Admin | None,
    ) -> None:
        where = "embedded Valkey, started now" if started else "already running"
        rows = [
            ("redis", f"{redact_url(url)} ({where if not settings.REDIS_URL else 'REDIS_URL'})"),
            ("database", str(settings.DATABASES["default"]["NAME"])),
        ]
        rows += [(c.name, f"pid {c.proc.pid}") for c in children if c.proc is not None]
        width = max(len(name) for name, _ in rows) + 1  # "demo producer" is the longest
        lines = ["", "Streamdesk is running:"]
        lines += [f"  {name:<{width}}{value}" for name, value in rows]
        if not options["no_console"]:
            lines += ["", f"  console:    http://127.0.0.1:{options['port']}/"]
            lines += sign_in_lines(admin) if admin else []
            if not options["access_log"]:
                lines += ["  (no access log: ACCESS_LOG=1 turns it on)"]
        lines += [""]
        if settings.STREAMDESK_DEMO:
            # Other terminals must be in the same mode to see the demo types.
            lines += ["  elsewhere:  export DEBUG=1 STREAMDESK_DEMO=1 (the mode make run uses)"]
        lines += ["  watch it:   python manage.py streams"]
        if not settings.REDIS_URL:
            # The embedded server's own client, ready to paste (no redis-cli needed).
            lines += [f"  redis-cli:  {cli_line(url)}"]
        if settings.STREAMDESK_DEMO:
            lines += [
                '  publish:    python manage.py publish demo.echo --data \'{"hello": "world"}\''
            ]
        lines += ["  A process that dies is restarted; Ctrl-C stops everything started here.", ""]
        self.stdout.write("\n".join(lines))


def cli_line(url: str) -> str:
    """The embedded server's own ``valkey-cli`` (shipped beside it), pointed at ``url``: a
    unix socket by ``-s``, a port by ``-u``."""
    cli = valkey_binary().with_name("valkey-cli")
    if url.startswith("unix://"):
        return f"{cli} -s {url.removeprefix('unix://')}"
    return f"{cli} -u {url}"
