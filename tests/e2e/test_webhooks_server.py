"""Webhooks into a real daphne: 100 concurrent deliveries land once each; concurrent replays
of a body land once; a streamed body without Content-Length is cut off at the limit."""

from __future__ import annotations

import http.client
import json
import urllib.request
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
import redis

from tests.support.console_server import Console
from tests.support.wait import wait_for
from tests.support.webhook_signing import github_headers

pytestmark = pytest.mark.e2e

SECRET = "e2e-secret"
ISSUE = {
    "action": "opened",
    "issue": {"number": 1, "title": "t", "state": "open", "html_url": "https://x/1"},
    "repository": {"full_name": "acme/api"},
}


@pytest.fixture
def server(r: redis.Redis, worker_env: dict[str, str], tmp_path: Path) -> Iterator[Console]:
    hooks = tmp_path / "webhooks.json"
    hooks.write_text(
        json.dumps({"gh": {"scheme": "github", "mapping": "github", "secret": SECRET}})
    )
    console = Console({**worker_env, "STREAMDESK_WEBHOOKS_FILE": str(hooks)}, tmp_path / "d.log")
    try:
        wait_for(console.ready, what="daphne to serve /login/")
        yield console
    finally:
        console.stop()


def deliver(url: str, delivery: str, number: int | None = None) -> tuple[int, dict[str, str]]:
    payload = {**ISSUE, "issue": {**ISSUE["issue"], "number": number or int(delivery)}}
    body = json.dumps(payload).encode()
    headers = {"Content-Type": "application/json"}
    headers |= github_headers(SECRET, body, "issues", delivery)
    request = urllib.request.Request(f"{url}/hooks/gh/", body, headers, method="POST")
    with urllib.request.urlopen(request, timeout=30) as response:
        return response.status, json.loads(response.read())


def test_100_concurrent_webhooks_land_exactly_once(r: redis.Redis, server: Console) -> None:
    with ThreadPoolExecutor(max_workers=100) as pool:
        answers = list(pool.map(lambda n: deliver(server.url, str(n)), range(100)))
    assert {status for status, _ in answers} == {202}
    entries = r.xrange("streamdesk:events")
    assert len(entries) == 100
    assert {answer["entry_id"] for _, answer in answers} == {i for i, _ in entries}
    ids = sorted(json.loads(f["event"])["id"] for _, f in entries)
    assert ids == sorted(str(n) for n in range(100))


def test_concurrent_replays_with_new_delivery_ids_land_once(
    r: redis.Redis, server: Console
) -> None:
    # Each of 30 bodies twice at once, under two delivery ids: the second copy is a replay.
    jobs = [(f"{n}{copy}", n) for n in range(1, 31) for copy in ("00", "01")]
    with ThreadPoolExecutor(max_workers=60) as pool:
        answers = list(pool.map(lambda job: deliver(server.url, *job), jobs))
    assert sorted(status for status, _ in answers) == [200] * 30 + [202] * 30
    assert r.xlen("streamdesk:events") == 30


def test_chunked_body_without_content_length_is_413(r: redis.Redis, server: Console) -> None:
    def chunks() -> Iterator[bytes]:
        for _ in range(4096):  # 4 MiB offered, the limit is 1 MiB
            yield b" " * 1024

    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=30)
    try:
        conn.putrequest("POST", "/hooks/gh/")
        conn.putheader("Content-Type", "application/json")
        conn.putheader("Transfer-Encoding", "chunked")
        conn.endheaders()
        try:
            for chunk in chunks():
                conn.send(b"%x\r\n%s\r\n" % (len(chunk), chunk))
            conn.send(b"0\r\n\r\n")
        except (BrokenPipeError, ConnectionResetError):
            pass  # the server answered and closed before the client finished sending
        assert conn.getresponse().status == 413
    finally:
        conn.close()
    assert not r.exists("streamdesk:events")
