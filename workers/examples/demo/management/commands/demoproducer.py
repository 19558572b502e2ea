"""``manage.py demoproducer``: a steady trickle of demo events, for ``make run``.

Its app (``workers.examples.demo``) is installed in demo mode only, so the command exists only
there; ``manage.py`` says so outside it."""

from __future__ import annotations

import random
import signal
import time
from argparse import ArgumentParser
from datetime import UTC, datetime
from types import FrameType
from typing import Any

from django.core.management.base import BaseCommand, CommandError

from workers.core import keys
from workers.core.errors import StreamdeskError
from workers.core.events import Envelope
from workers.core.registry import default_registry
from workers.from_settings import partitions, redis_client
from workers.producers.publish import build_envelope, publish_envelopes


def demo_event(n: int, rng: random.Random) -> list[Envelope]:
    """Mostly echoes, some sleeps, a rare failure, and now and then a redelivered duplicate."""
    roll = rng.random()
    if roll < 0.05:
        return [build_envelope("demo.fail", {"message": f"demo failure #{n}"}, source="demo")]
    if roll < 0.30:
        ms = rng.randint(50, 1500)
        return [build_envelope("demo.sleep", {"ms": ms}, source="demo", subject=f"job/{n}")]
    envelope = build_envelope("demo.echo", {"n": n}, source="demo", subject=f"order/{n % 50}")
    # A producer retry: the same event id twice; the gate must run it once.
    return [envelope, envelope] if roll > 0.95 else [envelope]


TICKET_TITLES = (
    "Checkout fails with a 500",
    "Invoice shows the wrong VAT",
    "Cannot reset my password",
    "Feature request: dark mode",
    "Refund not received",
)


ISSUE_TITLES = (
    ("Dashboard crashes with a traceback after upgrade", "Steps: open /dashboard. Error 500."),
    ("Feature: allow exporting runs as CSV", "It would be nice to download the table."),
    ("How do I set the claim idle time?", "Is it possible per group?"),
    ("Typo in the README quick start", "The publish command misses a quote."),
    ("API token exposed in CI logs", "A token leak in the build output."),
)
LEAKING_REPOS = ("acme/payments", "acme/web", "acme/infra", "acme/sandbox")
CREDENTIAL_KINDS = ("aws_access_key", "github_token", "slack_token", "database_password")
DEPLOY_FAILURES = (
    ("production", "container api killed: OOMKilled (exit 137)"),
    ("staging", 'django.db.utils.ProgrammingError: relation "orders" does not exist'),
    ("production", "readiness probe failed: HTTP 503 for /healthz"),
    ("production", "redis: connection refused (127.0.0.1:6379)"),
)


def agent_event(n: int, rng: random.Random) -> Envelope | None:
    """Now and then, work for the example agents (docs/agents.md): a new GitHub issue
    (tool-calling triage), a leaked credential (the remediation state machine) or, with
    LangGraph installed, a failed deploy (the graph)."""
    if n % 7 == 3:
        title, body = rng.choice(ISSUE_TITLES)
        data = {
            "repository": rng.choice(LEAKING_REPOS[:3]),
            "number": n,
            "title": title,
            "body": body,
            "author": f"user{n % 11}",
        }
        return build_envelope("github.issue.opened", data, source="github", subject=f"issue/{n}")
    if n % 13 == 5:
        data = {
            "alert_id": f"alert-{n}",
            "credential_id": f"cred-{n:06d}",
            "kind": rng.choice(CREDENTIAL_KINDS),
            "repository": rng.choice(LEAKING_REPOS),
            "file_path": "config/settings.py",
            "commit": f"{rng.getrandbits(160):040x}",
            "detected_at": datetime.now(UTC).isoformat(),
        }
        return build_envelope(
            "security.credential_leaked", data, source="scanner", subject=f"alert/{n}"
        )
    if n % 17 == 9 and "deploy.failed" in default_registry:  # the LangGraph example
        environment, log = rng.choice(DEPLOY_FAILURES)
        data = {
            "service": rng.choice(("api", "billing", "web")),
            "version": f"1.{n}.0",
            "previous_version": f"1.{n - 1}.0",
            "environment": environment,
            "error_log": log,
            "deploy_id": f"deploy-{n}",
        }
        return build_envelope("deploy.failed", data, source="ci", subject=f"deploy/{n}")
    return None


def ticket_change(n: int, rng: random.Random) -> None:
    """Every tenth beat: open a ticket or move one along, through the outbox (the relay in
    ``runworker --relay`` publishes it; the demo triage agents run on it)."""
    from workers.examples.tickets.models import Ticket

    ticket = Ticket.objects.exclude(status="closed").order_by("?").first()
    if ticket is None or rng.random() < 0.5:
        Ticket.objects.create(title=rng.choice(TICKET_TITLES), customer=f"customer-{n % 7}")
        return
    ticket.status = "pending" if ticket.status == "open" else "closed"
    ticket.save()


class Command(BaseCommand):
    help = (
        "Publish demo events (demo.echo, demo.sleep, demo.fail, and work for the example "
        "agents) at a steady rate until stopped."
    )

    def add_arguments(self, parser: ArgumentParser) -> None:
        parser.add_argument("--rate", type=float, default=2.0, help="events per second")
        parser.add_argument("--stream", default=keys.DEFAULT_STREAM, help="target stream")
        parser.add_argument("--count", type=int, default=0, help="stop after N events (0: never)")
        parser.add_argument("--seed", type=int, default=None, help="random seed")
        parser.add_argument(
            "--no-agents",
            dest="agents",
            action="store_false",
            help="do not publish GitHub issues and leaked-credential alerts for the example agents",
        )
        parser.add_argument(
            "--no-tickets",
            dest="tickets",
            action="store_false",
            help="do not open and update demo tickets (the transactional outbox example)",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        if options["rate"] <= 0:
            raise CommandError("--rate must be positive")
        stopping = False

        def stop(signum: int, frame: FrameType | None) -> None:
            nonlocal stopping
            stopping = True

        signal.signal(signal.SIGTERM, stop)
        signal.signal(signal.SIGINT, stop)
        rng = random.Random(options["seed"])
        interval_s = 1.0 / options["rate"]
        sent = 0
        try:
            client = redis_client()
            layout = partitions(options["stream"])
            while not stopping and (options["count"] == 0 or sent < options["count"]):
                envelopes = demo_event(sent, rng)
                if options["agents"]:
                    extra = agent_event(sent, rng)
                    envelopes += [extra] if extra else []
                publish_envelopes(client, layout, envelopes)
                if options["tickets"] and sent % 10 == 0:
                    ticket_change(sent, rng)
                sent += 1
                time.sleep(interval_s)
        except StreamdeskError as exc:
            raise CommandError(str(exc)) from exc
        self.stdout.write(f"demo producer published {sent} events")
