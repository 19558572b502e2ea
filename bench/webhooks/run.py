"""Webhook requests per second into the stream, on one daphne process.

Starts a private Valkey and one daphne (DEBUG off, one generic HMAC source), then N client
threads, each on its own keep-alive connection, post signed webhooks for a fixed time.
Every 202 is checked against the stream's length afterwards. Usage, from the project root::

    .venv/bin/python -m bench.webhooks                  # 32 clients for 10 s
    .venv/bin/python -m bench.webhooks --clients 8 --seconds 3
    .venv/bin/python -m bench.webhooks --baseline     # 404s: Django and daphne alone
    .venv/bin/python -m bench.webhooks --ref HEAD~1   # a git ref instead of the working tree
"""

from __future__ import annotations

import argparse
import hashlib
import hmac
import http.client
import json
import statistics
import threading
import time
from dataclasses import dataclass, field

from bench.common.harness import (
    PRODUCTION_ENV,
    PYTHON,
    STREAM,
    BenchError,
    log_tail,
    open_bench,
    spawn,
    wait_until,
)
from workers.redis.embedded import free_port

SECRET = "bench-webhook-secret"


@dataclass
class Tally:
    latencies_ms: list[float] = field(default_factory=list)
    errors: dict[int, int] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)


def client_loop(port: int, client_no: int, stop_at: float, tally: Tally, path: str) -> None:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    seen: list[float] = []
    errors: dict[int, int] = {}
    n = 0
    while time.monotonic() < stop_at:
        n += 1
        body = json.dumps({"client": client_no, "n": n, "note": "x" * 200}).encode()
        sig = hmac.new(SECRET.encode(), body, hashlib.sha256).hexdigest()
        headers = {"Content-Type": "application/json", "X-Signature": sig}
        started = time.perf_counter()
        conn.request("POST", path, body, headers)
        response = conn.getresponse()
        response.read()
        seen.append((time.perf_counter() - started) * 1000)
        if response.status != 202:
            errors[response.status] = errors.get(response.status, 0) + 1
    conn.close()
    with tally.lock:
        tally.latencies_ms.extend(seen)
        for status, count in errors.items():
            tally.errors[status] = tally.errors.get(status, 0) + count


def ready(port: int) -> bool:
    try:
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=2)
        conn.request("GET", "/login/")
        return conn.getresponse().status < 500
    except OSError:
        return False


def run(clients: int, seconds: float, baseline: bool, ref: str | None = None) -> None:
    with open_bench(ref=ref) as bench:
        hooks = bench.tmp / "webhooks.json"
        hooks.write_text(json.dumps({"bench": {"scheme": "hmac", "secret": SECRET}}))
        env = bench.env(bench.fresh_db("webhooks")) | PRODUCTION_ENV | {"ALLOWED_HOSTS": "*"}
        env["STREAMDESK_WEBHOOKS_FILE"] = str(hooks)
        env["STREAMDESK_JOB_RUNNER"] = "0"
        port = free_port()
        cmd = [PYTHON, "-m", "daphne", "-b", "127.0.0.1", "-p", str(port)]
        log = bench.log_path("daphne")
        with spawn([*cmd, "console.asgi:application"], env, log, bench.src) as proc:
            wait_until(lambda: proc.poll() is not None or ready(port), "daphne", 60.0, 0.1)
            if proc.poll() is not None:
                raise BenchError(f"daphne exited {proc.returncode}:\n{log_tail(log)}")
            tally = Tally()
            path = "/hooks/none/" if baseline else "/hooks/bench/"
            stop_at = time.monotonic() + seconds
            threads = [
                threading.Thread(target=client_loop, args=(port, i, stop_at, tally, path))
                for i in range(clients)
            ]
            started = time.monotonic()
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()
            elapsed = time.monotonic() - started
            in_stream = int(bench.redis.xlen(STREAM))
        report(clients, elapsed, tally, in_stream, baseline)


def report(clients: int, elapsed: float, tally: Tally, in_stream: int, baseline: bool) -> None:
    lat = sorted(tally.latencies_ms)
    if baseline:
        print(f"baseline, 404 for an unknown source: {len(lat) / elapsed:,.0f} requests/s")
        return
    accepted = len(lat) - sum(tally.errors.values())
    if accepted != in_stream:
        raise BenchError(f"{accepted} answered 202 but the stream holds {in_stream}")
    p99 = lat[int(len(lat) * 0.99) - 1] if lat else 0.0
    print(f"clients: {clients}, window: {elapsed:.1f} s, one daphne process")
    print(f"accepted (202, each in the stream): {accepted}, other answers: {tally.errors}")
    print(f"webhooks/s: {accepted / elapsed:,.0f}")
    print(f"latency ms: p50 {statistics.median(lat):.1f}, p99 {p99:.1f}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.webhooks", description=__doc__)
    parser.add_argument("--clients", type=int, default=32)
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument(
        "--baseline",
        action="store_true",
        help="post to an unknown source instead: Django and daphne alone (404s)",
    )
    parser.add_argument("--ref", help="benchmark this git ref instead of the working tree")
    args = parser.parse_args(argv)
    run(args.clients, args.seconds, args.baseline, args.ref)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
