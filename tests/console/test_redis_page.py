"""The Redis page on real servers: the suite's Valkey, and private Valkey 8 and Redis 7.0
servers for what needs CONFIG SET or ACL SETUSER (never the shared server). Its figures,
the eviction warnings, a refused command shown as not allowed, and the nav and overview."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
import redis
from django.template.loader import render_to_string
from django.test import Client

from console.live.redis_panel import build, meter_for, read
from console.runtime import keys, redis_client
from tests.support.console import text
from tests.support.redis_server import REDIS_SERVER, private
from tests.support.scrape import parse, value
from workers import from_settings
from workers.retention import Retention

KINDS = [
    "valkey",
    pytest.param(
        "redis7",
        marks=pytest.mark.skipif(not REDIS_SERVER.exists(), reason="no redis-server (apt redis)"),
    ),
]


@pytest.fixture(autouse=True)
def fresh_console_client(redis_url: str) -> Iterator[None]:
    """A console client of its own: the meters this test sets to read every tick go with it."""
    from_settings._client.cache_clear()
    yield
    from_settings._client.cache_clear()


def console_at(settings: Any, url: str) -> None:
    settings.REDIS_URL = url
    from_settings._client.cache_clear()
    meter_for(redis_client()).read_every_s = 0  # every render reads


@pytest.fixture(params=KINDS)
def own(request: pytest.FixtureRequest, settings: Any) -> Iterator[redis.Redis]:
    """A private server of each kind, the console pointed at it: free to CONFIG SET."""
    server = private(request.param)
    client = redis.Redis.from_url(server.url, decode_responses=True)
    console_at(settings, server.url)
    try:
        yield client
    finally:
        client.close()
        from_settings._client.cache_clear()
        server.stop()


def test_redis_page_shows_the_servers_figures(r: redis.Redis, staff_client: Client) -> None:
    meter_for(redis_client()).read_every_s = 0
    info = r.info()
    body = text(staff_client.get("/redis/"))
    assert '<a href="/redis/" aria-current="page">Redis</a>' in body
    assert 'data-live="redis"' in body
    assert 'data-metric="policy">noeviction<' in body
    assert "maxmemory: no limit" in body
    assert f'data-metric="aof">{"on" if info["aof_enabled"] else "off"}<' in body
    assert 'data-metric="connected-clients">' in body
    assert "the safe choice: at the limit writes fail loudly" in body
    assert "None: no eviction policy that can drop" in body


def test_slow_log_names_streamdesks_connections(own: redis.Redis, staff_client: Client) -> None:
    own.config_set("slowlog-log-slower-than", 0)  # log every command: a private server
    worker = redis.Redis.from_url(_url(own))
    worker.client_setname("streamdesk-worker:w-1")
    worker.xadd("streamdesk:events", {"event": "{}"})
    worker.close()
    body = text(staff_client.get("/redis/"))
    assert 'data-metric="slowlog"' in body
    assert "XADD streamdesk:events * event {}" in body
    assert "streamdesk-worker:w-1" in body and "a worker" in body


def _url(client: redis.Redis) -> str:
    kwargs = client.connection_pool.connection_kwargs
    return f"redis://{kwargs['host']}:{kwargs['port']}/0"


@pytest.mark.parametrize(
    ("policy", "level", "said"),
    [
        ("allkeys-lru", "bad", "maxmemory-policy allkeys-lru can evict any key"),
        ("volatile-lru", "warn", "maxmemory-policy volatile-lru can evict keys with a TTL"),
    ],
)
def test_an_eviction_policy_that_can_drop_keys_is_a_warning(
    own: redis.Redis, staff_client: Client, policy: str, level: str, said: str
) -> None:
    own.config_set("maxmemory", "256mb")
    own.config_set("maxmemory-policy", policy)
    body = text(staff_client.get("/redis/"))
    assert f'<li class="{level}">{said}' in body
    assert f'data-metric="policy">{policy}<' in body
    assert "% of maxmemory 256.0\xa0MB" in body
    overview = text(staff_client.get("/"))
    assert 'data-live="redis-summary"' in overview
    assert f'<li class="{level}">{said}' in overview
    assert "1 warning</span>" in overview


def test_noeviction_with_a_limit_is_no_warning(own: redis.Redis, staff_client: Client) -> None:
    own.config_set("maxmemory", "256mb")
    own.config_set("maxmemory-policy", "noeviction")
    body = text(staff_client.get("/redis/"))
    assert "None: no eviction policy that can drop" in body
    assert 'data-metric="policy">noeviction<' in body
    assert "warning</span>" not in text(staff_client.get("/"))


def test_a_refused_slowlog_is_not_allowed_not_a_500(
    own: redis.Redis, staff_client: Client, settings: Any
) -> None:
    own.execute_command(
        "ACL", "SETUSER", "panel", "on", ">pw-panel", "~*", "&*", "+@all", "-slowlog"
    )
    kwargs = own.connection_pool.connection_kwargs
    console_at(settings, f"redis://panel:pw-panel@{kwargs['host']}:{kwargs['port']}/0")
    response = staff_client.get("/redis/")
    assert response.status_code == 200
    assert 'data-metric="slowlog-error">SLOWLOG not allowed' in text(response)
    assert 'data-metric="used-memory"' in text(response)  # the rest is shown


def test_a_refused_info_is_not_allowed_in_its_place(own: redis.Redis) -> None:
    """The console's own connection needs INFO (its version check); a panel read without it
    still renders."""
    own.execute_command("ACL", "SETUSER", "blind", "on", ">pw-blind", "~*", "&*", "+@all", "-info")
    kwargs = own.connection_pool.connection_kwargs
    blind = redis.Redis(kwargs["host"], kwargs["port"], username="blind", password="pw-blind")
    try:
        reading = read(blind, keys(), 0, 15 * 60_000)
    finally:
        blind.close()
    (node,) = reading.nodes
    assert node.info is None and node.info_error.startswith("not allowed")
    html = render_to_string(
        "console/_redis.html", {"panel": build(reading, [], Retention(604_800), 0)}
    )
    assert 'data-metric="info-error">INFO not allowed' in html


def test_metrics_serve_redis_memory_and_evictions(own: redis.Redis, settings: Any) -> None:
    """The console's /metrics has the page's gauges (the test settings open it on loopback)."""
    own.config_set("maxmemory", "256mb")
    own.config_set("maxmemory-policy", "allkeys-lru")
    settings.STREAMDESK_METRICS_TOKEN = "redis-page-token"
    response = Client().get("/metrics", HTTP_AUTHORIZATION="Bearer redis-page-token")
    assert response.status_code == 200
    series = parse(response.content.decode())
    assert value(series, "streamdesk_redis_maxmemory_bytes", node="") == 256 * 1024**2
    assert value(series, "streamdesk_redis_used_memory_bytes", node="") > 0
    assert value(series, "streamdesk_redis_evicted_keys_total", node="") == 0
    assert value(series, "streamdesk_up") == 1
