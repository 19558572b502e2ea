"""GET /metrics: who may scrape it, and what one scrape says after real traffic."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
import redis
from django.test import Client

from tests.support.scrape import parse, value
from workers import from_settings

pytestmark = pytest.mark.django_db(transaction=True)
STREAM = "streamdesk:events"
TOKEN = "scrape-token-for-tests"


@pytest.fixture
def guarded(settings: Any) -> Any:
    settings.STREAMDESK_METRICS_TOKEN = TOKEN
    settings.STREAMDESK_METRICS_ALLOW = []
    return settings


def scrape(client: Client, token: str = TOKEN, **extra: Any) -> Any:
    return client.get("/metrics", HTTP_AUTHORIZATION=f"Bearer {token}", **extra)


def test_metrics_without_a_token_is_401_with_a_bearer_challenge(guarded: Any) -> None:
    response = Client().get("/metrics")
    assert response.status_code == 401
    assert response["WWW-Authenticate"].startswith("Bearer ")
    assert b"bearer token is required" in response.content


def test_metrics_with_a_wrong_token_is_401(guarded: Any) -> None:
    response = scrape(Client(), token="scrape-token-for-test")
    assert response.status_code == 401
    assert b"invalid bearer token" in response.content


def test_metrics_from_an_address_not_allowed_is_403(guarded: Any, r: redis.Redis) -> None:
    guarded.STREAMDESK_METRICS_ALLOW = ["10.0.0.0/8"]
    assert scrape(Client(), REMOTE_ADDR="192.168.1.9").status_code == 403
    # Both settings: the address and the token must both pass.
    assert scrape(Client(), REMOTE_ADDR="10.1.2.3").status_code == 200
    assert Client().get("/metrics", REMOTE_ADDR="10.1.2.3").status_code == 401


def test_metrics_from_an_allowed_network_needs_no_token(settings: Any, r: redis.Redis) -> None:
    settings.STREAMDESK_METRICS_TOKEN = ""
    settings.STREAMDESK_METRICS_ALLOW = ["10.0.0.0/8", "::1/128"]
    assert Client().get("/metrics", REMOTE_ADDR="10.9.9.9").status_code == 200
    assert Client().get("/metrics", REMOTE_ADDR="127.0.0.1").status_code == 403


def test_metrics_unconfigured_are_refused_without_debug(settings: Any) -> None:
    settings.DEBUG = False
    settings.STREAMDESK_METRICS_TOKEN = ""
    settings.STREAMDESK_METRICS_ALLOW = []
    response = Client().get("/metrics")
    assert response.status_code == 403
    assert b"STREAMDESK_METRICS_TOKEN" in response.content


def test_metrics_unconfigured_with_debug_serve_loopback_only(settings: Any, r: redis.Redis) -> None:
    settings.DEBUG = True
    settings.STREAMDESK_METRICS_TOKEN = ""
    settings.STREAMDESK_METRICS_ALLOW = []
    assert Client().get("/metrics").status_code == 200
    assert Client().get("/metrics", REMOTE_ADDR="10.0.0.5").status_code == 403


def test_metrics_answer_get_only(guarded: Any) -> None:
    response = Client().post("/metrics", HTTP_AUTHORIZATION=f"Bearer {TOKEN}")
    assert response.status_code == 405


def test_metrics_after_traffic_count_runs_and_dead_letters(
    guarded: Any, traffic: list[str]
) -> None:
    """``traffic``: three demo.echo events and one demo.fail, three deliveries at most."""
    response = scrape(Client())
    assert response.status_code == 200
    assert response["Content-Type"].startswith("text/plain; version=0.0.4")
    series = parse(response.content.decode())
    assert value(series, "streamdesk_up") == 1
    assert value(series, "streamdesk_events_processed_total", stream=STREAM) == 3
    assert value(series, "streamdesk_events_failed_total", stream=STREAM) == 3
    assert value(series, "streamdesk_events_retries_total", stream=STREAM) == 2
    assert value(series, "streamdesk_events_dead_lettered_total", stream=STREAM) == 1
    assert value(series, "streamdesk_stream_dead_letters", stream=STREAM) == 1
    assert value(series, "streamdesk_group_pending", stream=STREAM, group="agents") == 0
    runs = "streamdesk_agent_run_duration_seconds"
    assert value(series, f"{runs}_count", type="demo.echo") == 3
    assert value(series, f"{runs}_count", type="demo.fail") == 3
    assert value(series, f"{runs}_bucket", type="demo.echo", le="+Inf") == 3


def test_metrics_show_each_budget(guarded: Any, r: redis.Redis) -> None:
    guarded.STREAMDESK_RATE_LIMITS = "github=5/s:10"
    series = parse(scrape(Client()).content.decode())
    assert value(series, "streamdesk_budget_burst", budget="github") == 10
    assert value(series, "streamdesk_budget_rate_per_second", budget="github") == 5
    assert value(series, "streamdesk_budget_taken_total", budget="github") == 0


@pytest.fixture
def redis_down(redis_url: str) -> Iterator[None]:
    from django.conf import settings

    settings.REDIS_URL = "redis://127.0.0.1:1/0"
    from_settings._client.cache_clear()
    yield
    settings.REDIS_URL = redis_url
    from_settings._client.cache_clear()


def test_metrics_with_redis_down_answer_up_0_not_an_error(guarded: Any, redis_down: None) -> None:
    response = scrape(Client())
    assert response.status_code == 200
    text = response.content.decode()
    assert value(parse(text), "streamdesk_up") == 0
    assert "# streamdesk_up is 0: " in text and "127.0.0.1:1" in text
