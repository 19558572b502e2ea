"""Websocket fan-out: one real daphne process, N staff browsers subscribed to the overview.

The clients are a minimal RFC 6455 client on asyncio streams (handshake, masked text frames
out, unmasked frames in, ping/pong), so the benchmark needs no websocket library. Each one
sends the session cookie of a staff user and an ``Origin`` of the console's own address, as
a browser on the page does, then ``{"subscribe": ["overview"]}``.
"""

from __future__ import annotations

import asyncio
import base64
import itertools
import json
import os
import struct
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

from bench.common.harness import PYTHON, BenchError, log_tail, spawn, wait_until
from workers.redis.embedded import free_port

SETTLE_S = 2.0  # after the last client subscribed, before the counting window opens
GRACE_S = 2.0  # after the window closes: deliveries of its last tick still count
CONNECT_TIMEOUT_S = 30.0
CLK_TCK = os.sysconf("SC_CLK_TCK")


@dataclass
class Client:
    ticks: dict[int, float] = field(default_factory=dict)  # at_ms -> wall time received
    missing_fragment: int = 0
    sizes: list[int] = field(default_factory=list)  # bytes of each message


@dataclass(frozen=True, slots=True)
class FanOut:
    clients: int
    seconds: float
    ticks: int  # ticks the sampler broadcast in the window (first delivery inside it)
    per_client_min: int
    per_client_max: int
    clients_with_all: int
    spread_ms: list[float]  # per tick: last client's receipt minus the first's
    delay_ms: list[float]  # per delivery: receipt minus the tick's sample time (at_ms)
    gaps_ms: list[int]  # between consecutive ticks' at_ms
    missing_fragment: int  # messages without the subscribed "overview" fragment
    cpu_ms_per_tick: float  # daphne's CPU time (user + system) over the window, per tick
    message_bytes: int  # the largest message a client received


def _frame(opcode: int, payload: bytes) -> bytes:
    """A client frame: FIN set, masked (RFC 6455 5.3)."""
    mask = os.urandom(4)
    n = len(payload)
    if n < 126:
        head = struct.pack("!BB", 0x80 | opcode, 0x80 | n)
    elif n < 1 << 16:
        head = struct.pack("!BBH", 0x80 | opcode, 0x80 | 126, n)
    else:
        head = struct.pack("!BBQ", 0x80 | opcode, 0x80 | 127, n)
    return head + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(payload))


async def _read_message(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> bytes:
    """The next text or binary message, answering pings on the way; EOF on close."""
    parts: list[bytes] = []
    while True:
        b0, b1 = await reader.readexactly(2)
        n = b1 & 0x7F
        if n == 126:
            (n,) = struct.unpack("!H", await reader.readexactly(2))
        elif n == 127:
            (n,) = struct.unpack("!Q", await reader.readexactly(8))
        if b1 & 0x80:
            raise BenchError("daphne sent a masked frame")
        payload = await reader.readexactly(n)
        opcode = b0 & 0x0F
        if opcode == 0x8:
            raise asyncio.IncompleteReadError(payload, None)
        if opcode == 0x9:
            writer.write(_frame(0xA, payload))
            continue
        if opcode in (0x0, 0x1, 0x2):
            parts.append(payload)
            if b0 & 0x80:
                return b"".join(parts)


async def _open(port: int, session: str) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    key = base64.b64encode(os.urandom(16)).decode()
    writer.write(
        (
            "GET /ws/dashboard/ HTTP/1.1\r\n"
            f"Host: 127.0.0.1:{port}\r\n"
            "Upgrade: websocket\r\nConnection: Upgrade\r\n"
            f"Sec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n"
            f"Origin: http://127.0.0.1:{port}\r\n"
            f"Cookie: sessionid={session}\r\n\r\n"
        ).encode()
    )
    head = await reader.readuntil(b"\r\n\r\n")
    status = head.split(b"\r\n", 1)[0]
    if b" 101 " not in status:
        writer.close()
        raise BenchError(f"websocket refused: {status.decode(errors='replace')}")
    writer.write(_frame(0x1, json.dumps({"subscribe": ["overview"]}).encode()))
    await writer.drain()
    return reader, writer


async def _listen(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, c: Client) -> None:
    try:
        while True:
            raw = await _read_message(reader, writer)
            c.sizes.append(len(raw))
            message = json.loads(raw)
            c.ticks.setdefault(int(message["at_ms"]), time.time())
            if "overview" not in message.get("fragments", {}):
                c.missing_fragment += 1
    except (asyncio.IncompleteReadError, ConnectionError):
        return


def _cpu_s(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLK_TCK  # utime + stime


async def _fan_out(port: int, session: str, n: int, seconds: float, pid: int) -> FanOut:
    opened = await asyncio.wait_for(
        asyncio.gather(*(_open(port, session) for _ in range(n))), CONNECT_TIMEOUT_S
    )
    clients = [Client() for _ in opened]
    tasks = [
        asyncio.create_task(_listen(r, w, c)) for (r, w), c in zip(opened, clients, strict=True)
    ]
    await asyncio.sleep(SETTLE_S)
    start, cpu0 = time.time(), _cpu_s(pid)
    await asyncio.sleep(seconds)
    end, cpu1 = time.time(), _cpu_s(pid)
    await asyncio.sleep(GRACE_S)
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
    for _, writer in opened:
        writer.close()
    return _summarize(clients, start, end, seconds, cpu1 - cpu0)


def _summarize(
    clients: list[Client], start: float, end: float, seconds: float, cpu_s: float
) -> FanOut:
    first: dict[int, float] = {}
    for c in clients:
        for at_ms, t in c.ticks.items():
            first[at_ms] = min(t, first.get(at_ms, t))
    window = sorted(at for at, t in first.items() if start <= t < end)
    if not window:
        raise BenchError("no tick reached any client during the window")
    got = [sum(1 for at in window if at in c.ticks) for c in clients]
    spread, delay = [], []
    for at in window:
        times = [c.ticks[at] for c in clients if at in c.ticks]
        spread.append((max(times) - min(times)) * 1000)
        delay += [t * 1000 - at for t in times]
    return FanOut(
        clients=len(clients),
        seconds=seconds,
        ticks=len(window),
        per_client_min=min(got),
        per_client_max=max(got),
        clients_with_all=sum(1 for g in got if g == len(window)),
        spread_ms=spread,
        delay_ms=delay,
        gaps_ms=[b - a for a, b in itertools.pairwise(window)],
        missing_fragment=sum(c.missing_fragment for c in clients),
        cpu_ms_per_tick=cpu_s * 1000 / len(window),
        message_bytes=max((n for c in clients for n in c.sizes), default=0),
    )


def _ready(port: int) -> bool:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/login/", timeout=1) as response:
            return bool(response.status == 200)
    except OSError:
        return False


def fan_out(
    env: dict[str, str], cwd: Path, log: Path, session: str, sizes: list[int], seconds: float
) -> list[FanOut]:
    """Start daphne (same env as the timed part: same database, secret and Redis), then for
    each of ``sizes`` in turn connect that many sockets and count the ticks each receives
    over ``seconds``. One process throughout: its sampler keeps running between sizes."""
    port = free_port()
    cmd = [PYTHON, "-m", "daphne", "-b", "127.0.0.1", "-p", str(port), "console.asgi:application"]
    with spawn(cmd, env, log, cwd) as proc:  # killed on the way out, whatever happens
        wait_until(lambda: proc.poll() is not None or _ready(port), "daphne to serve", 60.0, 0.1)
        if proc.poll() is not None:
            raise BenchError(f"daphne exited {proc.returncode}:\n{log_tail(log)}")
        results = [asyncio.run(_fan_out(port, session, n, seconds, proc.pid)) for n in sizes]
        proc.terminate()
        proc.wait(timeout=15)
    return results
