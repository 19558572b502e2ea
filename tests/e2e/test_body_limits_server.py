"""Request body limits in a real daphne: refused as the body arrives, on every path, before
the server has read (or kept) the rest of it."""

from __future__ import annotations

import json
import socket
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis

from tests.support.console_server import Console
from tests.support.wait import wait_for

pytestmark = pytest.mark.e2e

DEFAULT_LIMIT = 100_000
WEBHOOK_LIMIT = 50_000
CHUNK = b"x" * 65536


@pytest.fixture
def server(r: redis.Redis, worker_env: dict[str, str], tmp_path: Path) -> Iterator[Console]:
    hooks = tmp_path / "webhooks.json"
    hooks.write_text(json.dumps({"gh": {"scheme": "github", "mapping": "github", "secret": "s"}}))
    env = worker_env | {
        "STREAMDESK_WEBHOOKS_FILE": str(hooks),
        "STREAMDESK_MAX_REQUEST_BYTES": str(DEFAULT_LIMIT),
        "STREAMDESK_WEBHOOK_MAX_BYTES": str(WEBHOOK_LIMIT),
    }
    console = Console(env, tmp_path / "d.log")
    try:
        wait_for(console.ready, what="daphne to serve /login/")
        yield console
    finally:
        console.stop()


def open_request(server: Console, path: str, headers: dict[str, str]) -> socket.socket:
    sock = socket.create_connection(("127.0.0.1", server.port), timeout=10)
    lines = [f"POST {path} HTTP/1.1", "Host: 127.0.0.1", "Content-Type: application/json"]
    lines += [f"{name}: {value}" for name, value in headers.items()]
    sock.sendall(("\r\n".join(lines) + "\r\n\r\n").encode())
    return sock


def send_chunk(sock: socket.socket, data: bytes) -> None:
    sock.sendall(b"%x\r\n%s\r\n" % (len(data), data))


def status_line(sock: socket.socket) -> bytes:
    """The answer's first line; a timeout if the server is still waiting for the body."""
    return sock.recv(4096).split(b"\r\n", 1)[0]


def rss_kb(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise AssertionError("no VmRSS")


def test_declared_length_over_the_limit_is_413_before_any_body(server: Console) -> None:
    sock = open_request(server, "/login/", {"Content-Length": str(10**9)})
    with sock:
        assert status_line(sock) == b"HTTP/1.1 413 Request Entity Too Large"


def test_chunked_webhook_is_413_once_past_its_limit_without_the_rest(server: Console) -> None:
    sock = open_request(server, "/hooks/gh/", {"Transfer-Encoding": "chunked"})
    with sock:
        send_chunk(sock, CHUNK)  # past 50,000 bytes; the body never ends
        assert status_line(sock) == b"HTTP/1.1 413 Request Entity Too Large"


def test_chunked_body_on_another_path_is_413_past_the_default_limit(server: Console) -> None:
    sock = open_request(server, "/login/", {"Transfer-Encoding": "chunked"})
    with sock:
        send_chunk(sock, CHUNK)  # under the default limit: nothing yet
        send_chunk(sock, CHUNK)  # past it
        assert status_line(sock) == b"HTTP/1.1 413 Request Entity Too Large"


def test_refused_body_is_not_read_to_its_end(server: Console) -> None:
    # An endless body: the server must stop reading it a few seconds after the 413.
    sock = open_request(server, "/login/", {"Transfer-Encoding": "chunked"})
    started = time.monotonic()
    with sock, pytest.raises(OSError):
        while time.monotonic() - started < 30:
            send_chunk(sock, CHUNK)
    assert time.monotonic() - started < 15


def test_refused_body_is_not_kept_in_memory(server: Console) -> None:
    before = rss_kb(server.proc.pid)
    sock = open_request(server, "/login/", {"Content-Length": str(200 * 2**20)})
    with sock:
        try:
            for _ in range(200 * 2**20 // len(CHUNK)):
                sock.sendall(CHUNK)
        except OSError:
            pass  # the server cut the connection after its 413
    # A request afterwards shows the server is done with the big one.
    wait_for(server.ready, what="daphne to answer again")
    assert rss_kb(server.proc.pid) - before < 50_000
