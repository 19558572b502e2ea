"""The dead-letter preview's cost per GET over a big dead-letter stream (issue 13, item 8).

Fills ``<stream>:dead`` with N letters shaped like the engine's (on a private Valkey and a
throwaway SQLite database), then times the console's preview GET as an operator, one after
another and ``--parallel`` at once. Run: ``python -m bench.actions.dead_preview --letters 200000``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

STREAM = "streamdesk:events"


def _environment(data: Path) -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "console.settings")
    os.environ.setdefault("SECRET_KEY", "bench-only-" + "x" * 40)
    os.environ.setdefault("ALLOWED_HOSTS", "testserver")
    os.environ["DATABASE_URL"] = f"sqlite:///{data / 'db.sqlite3'}"
    os.environ["STREAMDESK_DATA_DIR"] = str(data)


def _fill(url: str, letters: int) -> None:
    import redis

    client = redis.Redis.from_url(url, decode_responses=True)
    client.sadd("streamdesk:stats:streams", STREAM)
    for start in range(0, letters, 1000):
        with client.pipeline(transaction=False) as pipe:
            for n in range(start, min(start + 1000, letters)):
                event = {"type": "demo.fail", "id": f"e{n}", "source": "bench", "data": {"n": n}}
                pipe.xadd(
                    f"{STREAM}:dead",
                    {
                        "event": json.dumps(event),
                        "stream": STREAM,
                        "group": "agents",
                        "entry_id": f"{n + 1}-0",
                        "deliveries": "5",
                        "reason": "max-deliveries",
                        "error": "RuntimeError: boom",
                        "dead_at": "",
                        "by": "bench",
                    },
                )
            pipe.execute()


def _client(username: str) -> object:
    from django.contrib.auth.models import User
    from django.test import Client

    user, _ = User.objects.get_or_create(username=username, is_superuser=True, is_staff=True)
    client = Client()
    client.force_login(user)
    return client


def _get(url: str, username: str = "bench") -> tuple[float, int, str]:
    client = _client(username)
    started = time.perf_counter()
    response = client.get(url)  # type: ignore[attr-defined]
    return time.perf_counter() - started, response.status_code, response.content.decode()[:160]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--letters", type=int, default=200_000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--parallel", type=int, default=6)
    args = parser.parse_args()
    data = Path(tempfile.mkdtemp(prefix="bench-preview-"))
    _environment(data)
    from workers.redis.embedded import PrivateServer

    server = PrivateServer(data / "valkey").start()
    os.environ["REDIS_URL"] = server.url
    try:
        import django
        from django.core.management import call_command

        django.setup()
        call_command("migrate", verbosity=0)
        _fill(server.url, args.letters)
        url = f"/streams/{STREAM}/dead/preview/"
        alone = [_get(url) for _ in range(args.repeats)]
        median_s = statistics.median(t for t, _, _ in alone)
        print(f"{args.letters} letters, one at a time: median {median_s:.3f} s")
        print(f"  status {alone[0][1]}: {alone[0][2]}")
        for label, users in (
            ("one user", ["bench"] * args.parallel),
            ("each its own user", [f"u{n}" for n in range(args.parallel)]),
        ):
            with ThreadPoolExecutor(args.parallel) as pool:
                together = list(pool.map(_get, [url] * args.parallel, users))
            statuses = sorted(s for _, s, _ in together)
            slowest_s = max(t for t, _, _ in together)
            print(
                f"{args.parallel} at once, {label}: slowest {slowest_s:.3f} s, statuses {statuses}"
            )
    finally:
        server.stop()


if __name__ == "__main__":
    main()
