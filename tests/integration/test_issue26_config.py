"""Issue 26 items 7, 10 and 11 through the real command line and engine: a bad setting is one
line, no traceback, with no part of a password; a TLS URL on a plain port fails in bounded
time; an entry that is not UTF-8 is a decode-error dead letter, each bad byte kept."""

from __future__ import annotations

import asyncio
import os
import shutil
import ssl
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from queue import Queue
from urllib.parse import urlsplit

import pytest
import redis

from tests.support.engine import STREAM, xadd
from tests.support.processes import manage
from workers.core.errors import RedisUnavailable
from workers.redis.connection import CONNECT_TIMEOUT_S, aconnect, connect

ROOT = Path(__file__).resolve().parents[2]
SECRET = "Xk-s3cret9"


def cli(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "manage.py", *args],
        cwd=ROOT,
        env={**os.environ, "PYTHONUNBUFFERED": "1", **env},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def one_line_error(result: subprocess.CompletedProcess[str]) -> str:
    """The error, checked to be a single line on stderr and no traceback."""
    assert result.returncode == 1, (result.stdout, result.stderr)
    assert "Traceback" not in result.stderr, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    return lines[0]


@pytest.mark.parametrize(
    "variable",
    [
        "STREAMDESK_WEBHOOK_MAX_BYTES",
        "STREAMDESK_WEBHOOK_MAX_DEPTH",
        "STREAMDESK_WEBHOOK_REPLAY_WINDOW_S",
        "STREAMDESK_MAX_REQUEST_BYTES",
        "STREAMDESK_DRAIN_TIMEOUT_S",
        "STREAMDESK_CONCURRENCY",
        "SECURE_HSTS_SECONDS",
        "STREAMDESK_LOGIN_FAILURES_PER_USER",
    ],
)
@pytest.mark.parametrize("value", ["1MB", "-5", "nan"])
def test_a_bad_number_in_any_setting_is_one_line(variable: str, value: str) -> None:
    line = one_line_error(cli({variable: value}, "streams"))
    assert line.startswith("configuration error: ") and variable in line


@pytest.mark.parametrize(
    "url",
    [
        f"redis://:Zq/{SECRET}@127.0.0.1:6379/0",
        f"redis://:Zq#{SECRET}@127.0.0.1:6379/0",
        f"redis://default:Zq?{SECRET}@127.0.0.1:6379/0",
    ],
)
@pytest.mark.parametrize("command", ["streams", "publish"])
def test_a_password_the_url_cannot_hold_is_refused_unshown(url: str, command: str) -> None:
    args = [command] if command == "streams" else [command, "demo.echo"]
    result = cli({"REDIS_URL": url}, *args)
    line = one_line_error(result)
    assert line.startswith("configuration error: REDIS_URL") and "percent-encode" in line
    assert "Zq" not in result.stdout + result.stderr
    assert SECRET not in result.stdout + result.stderr


@pytest.mark.parametrize(
    "url",
    [f"postgres://u:Zq/{SECRET}@127.0.0.1:5432/db", f"postgres://u:Zq#{SECRET}@127.0.0.1:5432/db"],
)
def test_a_database_password_the_url_cannot_hold_is_refused_unshown(url: str) -> None:
    result = cli({"DATABASE_URL": url}, "streams")
    line = one_line_error(result)
    assert line.startswith("configuration error: DATABASE_URL") and "percent-encode" in line
    assert "Zq" not in result.stdout + result.stderr
    assert SECRET not in result.stdout + result.stderr


@pytest.mark.parametrize(
    ("variable", "value"),
    [
        ("DATABASE_URL", "bogus://x"),
        ("DATABASE_URL", "postgres://u:pw@127.0.0.1:abc/db"),
        ("LOG_LEVEL", "LOUD"),
    ],
)
def test_other_unreadable_settings_are_one_line(variable: str, value: str) -> None:
    line = one_line_error(cli({variable: value}, "streams"))
    assert line.startswith(f"configuration error: {variable}")


@pytest.mark.parametrize(
    ("path", "says"),
    [(":abc/0", "the port is not a number"), (":99999/0", "the port is not a number")],
)
def test_a_bad_port_is_one_line(path: str, says: str) -> None:
    line = one_line_error(cli({"REDIS_URL": f"redis://127.0.0.1{path}"}, "streams"))
    assert says in line


@pytest.mark.parametrize(("db", "says"), [("x", "not a number"), ("99", "DB index is out")])
def test_a_bad_database_is_one_line(redis_url: str, db: str, says: str) -> None:
    url = redis_url.rsplit("/", 1)[0] + f"/{db}"
    line = one_line_error(cli({"REDIS_URL": url}, "streams"))
    assert "REDIS_URL" in line and says in line


@pytest.mark.parametrize("command", [["streams"], ["publish", "demo.echo"]])
def test_tls_url_on_a_plain_port_fails_in_bounded_time(redis_url: str, command: list[str]) -> None:
    env = {"REDIS_URL": redis_url.replace("redis://", "rediss://", 1), "STREAMDESK_DEMO": "1"}
    started = time.monotonic()
    line = one_line_error(cli(env, *command))
    assert time.monotonic() - started < CONNECT_TIMEOUT_S + 10
    assert "cannot reach Redis" in line and "TLS" in line


def test_the_engine_client_gives_up_a_tls_handshake_too(redis_url: str) -> None:
    """runworker's asyncio client: its connect timeout covers the handshake."""

    async def attempt() -> None:
        await aconnect(redis_url.replace("redis://", "rediss://", 1))

    started = time.monotonic()
    with pytest.raises(RedisUnavailable, match="TLS"):
        asyncio.run(asyncio.wait_for(attempt(), CONNECT_TIMEOUT_S + 5))
    assert time.monotonic() - started < CONNECT_TIMEOUT_S + 5


@pytest.mark.e2e
@pytest.mark.django_db(transaction=True)
def test_an_entry_not_utf8_is_dead_lettered_exactly_and_good_ones_run(
    r: redis.Redis, redis_url: str, worker_env: dict[str, str]
) -> None:
    """Two entries that differ only in a byte that is not UTF-8 were one event (U+FFFD):
    now each is a decode-error, its dead letter shows its bad byte, and the good events
    beside them run."""
    raw = redis.Redis.from_url(redis_url)  # bytes in, bytes out
    bad = [
        b'{"type":"e2e.logs.sync","data":{"n":1,"s":"\xff"}}',
        b'{"type":"e2e.logs.sync","data":{"n":1,"s":"\xfe"}}',
    ]
    xadd(r, {"type": "e2e.logs.sync", "id": "before", "data": {"n": 1}})
    bad_ids = [raw.xadd(STREAM, {"event": payload}).decode() for payload in bad]
    xadd(r, {"type": "e2e.logs.sync", "id": "after", "data": {"n": 2}})
    env = {**worker_env, "STREAMDESK_AGENT_MODULES": "tests.e2e.log_agents"}
    done = manage(env, "runworker", "--burst", "--consumer", "utf8-1")
    assert done.returncode == 0, done.stderr
    letters = raw.xrange(f"{STREAM}:dead")
    assert [f[b"entry_id"].decode() for _, f in letters] == bad_ids
    # Each bad byte kept, as its escape (dead letters are written encodable): distinct.
    assert [f[b"event"] for _, f in letters] == [
        b'{"type":"e2e.logs.sync","data":{"n":1,"s":"\\udcff"}}',
        b'{"type":"e2e.logs.sync","data":{"n":1,"s":"\\udcfe"}}',
    ]
    assert {f[b"reason"] for _, f in letters} == {b"decode-error"}
    assert all(b"not UTF-8" in f[b"error"] for _, f in letters)
    stats = {k: int(v) for k, v in r.hgetall(f"streamdesk:stats:{STREAM}").items()}
    assert (stats["processed"], stats["dead_lettered"]) == (2, 2)
    raw.close()


def test_the_engine_client_writes_back_the_bytes_it_read(r: redis.Redis, redis_url: str) -> None:
    """hiredis packs a str as strict UTF-8: a value read with surrogateescape went back
    through it as a UnicodeEncodeError, which no caller takes for a Redis error."""

    async def round_trip() -> bytes:
        client = await aconnect(redis_url, encoding_errors="surrogateescape")
        try:
            await client.set("issue26:raw", b"\xff\xfe".decode("utf-8", "surrogateescape"))
            return bytes(await client.execute_command("GET", "issue26:raw", NEVER_DECODE=True))
        finally:
            await client.aclose()

    assert asyncio.run(round_trip()) == b"\xff\xfe"


async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while data := await reader.read(65536):
            writer.write(data)
            await writer.drain()
    except OSError:
        pass
    finally:
        writer.close()


class TlsProxy:
    """A TLS front for the plain test server (the embedded Valkey has no TLS), served by an
    event loop of its own thread until ``stop``."""

    def __init__(self, ctx: ssl.SSLContext, upstream: tuple[str, int]) -> None:
        self.ctx, self.upstream = ctx, upstream
        self.ready: Queue[tuple[asyncio.AbstractEventLoop, asyncio.Event, int]] = Queue()
        self.thread = threading.Thread(target=asyncio.run, args=(self._serve(),))
        self.thread.start()
        self.loop, self.done, self.port = self.ready.get(timeout=10)

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        up_reader, up_writer = await asyncio.open_connection(*self.upstream)
        await asyncio.gather(_pipe(reader, up_writer), _pipe(up_reader, writer))

    async def _serve(self) -> None:
        server = await asyncio.start_server(self._handle, "127.0.0.1", 0, ssl=self.ctx)
        done = asyncio.Event()
        self.ready.put((asyncio.get_running_loop(), done, server.sockets[0].getsockname()[1]))
        async with server:
            await done.wait()

    def stop(self) -> None:
        self.loop.call_soon_threadsafe(self.done.set)
        self.thread.join(10)


@pytest.fixture
def tls_url(redis_url: str, tmp_path: Path) -> Iterator[str]:
    """A TLS endpoint in front of the test server, its self-signed certificate trusted."""
    if shutil.which("openssl") is None:
        pytest.skip("openssl is needed to make a certificate")
    key, cert = tmp_path / "key.pem", tmp_path / "cert.pem"
    subject = ["-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1"]
    files = ["-keyout", str(key), "-out", str(cert)]
    openssl = ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1"]
    subprocess.run(
        [*openssl, *subject, *files],
        check=True,
        capture_output=True,
    )
    ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ctx.load_cert_chain(cert, key)
    parts = urlsplit(redis_url)
    proxy = TlsProxy(ctx, (parts.hostname or "127.0.0.1", parts.port or 6379))
    try:
        yield f"rediss://127.0.0.1:{proxy.port}{parts.path}?ssl_ca_certs={cert}"
    finally:
        proxy.stop()


def test_a_real_tls_server_still_connects_and_reads_without_a_timeout(tls_url: str) -> None:
    """The handshake runs under the connect timeout; after it, the socket's own timeout
    (none by default) is back: a slow command is not cut at 5 s."""
    client = connect(tls_url)
    try:
        assert client.ping() is True
        connection = client.connection_pool.get_connection()
        try:
            assert connection._sock is not None and connection._sock.gettimeout() is None
        finally:
            client.connection_pool.release(connection)
    finally:
        client.close()

    async def engine_ping() -> bool:
        engine = await aconnect(tls_url)
        try:
            return bool(await engine.ping())
        finally:
            await engine.aclose()

    assert asyncio.run(engine_ping()) is True
