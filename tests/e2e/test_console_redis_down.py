"""A console started while Redis is down answers 503 with a clear page (never a 500), and
works again, bulk-job runner included, once Redis is back: a real daphne, a real server."""

from __future__ import annotations

import json
import socket
import tempfile
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client

from tests.support.console_server import Console
from tests.support.engine import STREAM
from tests.support.wait import wait_for
from workers.models import BulkJob, Door, JobStatus
from workers.operations import jobs
from workers.operations.actions import DeadFilter
from workers.redis.embedded import PrivateServer
from workers.store.audit import Actor

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]


def accepts(port: int) -> bool:
    with socket.socket() as sock:
        sock.settimeout(0.5)
        return sock.connect_ex(("127.0.0.1", port)) == 0


def fetch(url: str, cookie: str = "", data: bytes | None = None) -> tuple[int, Any, str]:
    request = urllib.request.Request(url, data=data, headers={"Cookie": cookie} if cookie else {})
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, response.headers, response.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.headers, exc.read().decode()


@pytest.fixture
def down(worker_env: dict[str, str], tmp_path: Path) -> Iterator[tuple[Console, PrivateServer]]:
    """A console whose Redis (not started yet) is down, and that server."""
    server = PrivateServer(Path(tempfile.mkdtemp(prefix="streamdesk-down-")))
    env = {**worker_env, "REDIS_URL": server.url, "STREAMDESK_JOB_RUNNER": "1"}
    console = Console(env, tmp_path / "daphne.log")
    try:
        wait_for(lambda: accepts(console.port), what="daphne to listen")
        yield console, server
    finally:
        console.stop()
        server.stop()


def session_cookie() -> str:
    client = Client()
    client.force_login(User.objects.create_superuser("root", "", "pw-root"))
    return f"sessionid={client.cookies['sessionid'].value}"


def test_console_redis_down_at_start_is_503_then_recovers(
    down: tuple[Console, PrivateServer],
) -> None:
    console, server = down
    # The very first request starts the bulk-job runner: it must not fail on Redis.
    assert fetch(f"{console.url}/login/")[0] == 200, console.output()
    cookie = session_cookie()
    status, headers, body = fetch(f"{console.url}/", cookie)
    assert status == 503 and headers["Retry-After"] == "5"
    assert "The console cannot reach Redis" in body and server.url not in body
    status, _, body = fetch(f"{console.url}/api/streams/", cookie)
    assert status == 503 and "Redis cannot be reached" in json.loads(body)["error"]
    assert "Traceback" not in console.output()
    server.start()
    assert fetch(f"{console.url}/", cookie)[0] == 200
    assert fetch(f"{console.url}/api/streams/", cookie)[0] == 200
    job = jobs.create(
        Actor("root", Door.CONSOLE), "redrive", STREAM, "", jobs.filter_params(DeadFilter()), ""
    )
    wait_for(
        lambda: BulkJob.objects.get(pk=job.pk).status == JobStatus.DONE,
        what="the console's job runner, started while Redis was down, to run a job",
    )
