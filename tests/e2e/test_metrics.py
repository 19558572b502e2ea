"""Metrics after real traffic through two ``runworker`` processes, scraped from the console's
``/metrics`` and from ``manage.py metrics``: the same families, the exact counts."""

from __future__ import annotations

import signal
import socket
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import redis
from django.test import Client

from tests.support.engine import counters, xadd
from tests.support.processes import Workers, manage, start
from tests.support.scrape import Series, parse, value
from tests.support.wait import wait_for

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]
STREAM = "streamdesk:events"
GROUP = {"stream": STREAM, "group": "agents"}
TOKEN = "e2e-scrape-token"
RUNS = "streamdesk_agent_run_duration_seconds"
# Figures that move between two scrapes a moment apart.
CLOCKED = {
    "streamdesk_scrape_duration_seconds",
    "streamdesk_budget_tokens",
    "streamdesk_stream_oldest_entry_age_seconds",
}


def echo(n: int) -> dict[str, Any]:
    return {"type": "demo.echo", "source": "test", "id": f"e{n}", "data": {"n": n}}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def get(url: str, token: str = TOKEN) -> tuple[int, str, dict[str, str]]:
    request = urllib.request.Request(url, headers={"Authorization": f"Bearer {token}"})
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, response.read().decode(), dict(response.headers)
    except urllib.error.HTTPError as refused:
        return refused.code, refused.read().decode(), dict(refused.headers)


@pytest.fixture
def scrape_env(worker_env: dict[str, str], settings: Any) -> dict[str, str]:
    settings.STREAMDESK_METRICS_TOKEN = TOKEN
    return {**worker_env, "STREAMDESK_MAX_DELIVERIES": "3", "STREAMDESK_METRICS_TOKEN": TOKEN}


@pytest.fixture
def exporter(scrape_env: dict[str, str], tmp_path: Path) -> Iterator[str]:
    port = free_port()
    proc = start(scrape_env, tmp_path / "metrics.log", "metrics", "--port", str(port))
    url = f"http://127.0.0.1:{port}/metrics"
    try:
        wait_for(lambda: _answers(url), what="manage.py metrics to listen")
        yield url
    finally:
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=10) == 0, (tmp_path / "metrics.log").read_text()


def _answers(url: str) -> bool:
    try:
        return get(url)[0] == 200
    except OSError:
        return False


def console_scrape() -> Series:
    response = Client().get("/metrics", HTTP_AUTHORIZATION=f"Bearer {TOKEN}")
    assert response.status_code == 200
    return parse(response.content.decode())


@pytest.mark.serial  # judges liveness by the second: not beside other tests' load
def test_metrics_count_exactly_what_two_workers_did(
    r: redis.Redis, scrape_env: dict[str, str], workers: Workers, exporter: str
) -> None:
    workers.env = scrape_env
    for n in range(6):
        xadd(r, echo(n))
    xadd(r, {"type": "demo.fail", "source": "test", "id": "bad", "data": {"message": "boom"}})
    xadd(r, "not json")  # dead-lettered as it is read, never run
    workers.start("w1")
    workers.start("w2")
    wait_for(lambda: counters(r).get("dead_lettered", 0) == 2, what="two dead letters")
    wait_for(lambda: counters(r).get("processed", 0) == 6, what="six runs")
    for n in (0, 1):  # duplicates of finished events: acked, nothing runs
        xadd(r, echo(n))
    wait_for(lambda: counters(r).get("idempotency_hits", 0) == 2, what="two duplicates")

    # One worker may drain all eight before the other has read once (a slow start on a loaded
    # machine): it joins the group, and the scrape counts it, with its first read.
    wait_for(
        lambda: value(console_scrape(), "streamdesk_group_consumers", state="live", **GROUP) == 2,
        what="both workers in the group",
    )
    series = console_scrape()
    assert value(series, "streamdesk_up") == 1
    assert value(series, "streamdesk_workers", **GROUP) == 2
    for name in workers.procs:
        name.send_signal(signal.SIGTERM)
    for proc, name in zip(workers.procs, ("w1", "w2"), strict=True):
        assert workers.exit_code(proc, name, 30) == 0, workers.log(name)

    series = console_scrape()
    expected = {
        "processed": 6,
        "failed": 3,
        "retries": 2,
        "dead_lettered": 2,
        "idempotency_hits": 2,
        "deferred": 0,
    }
    got = {k: value(series, f"streamdesk_events_{k}_total", stream=STREAM) for k in expected}
    assert got == expected
    assert value(series, "streamdesk_stream_length", stream=STREAM) == 10
    assert value(series, "streamdesk_stream_entries_added_total", stream=STREAM) == 10
    assert value(series, "streamdesk_stream_dead_letters", stream=STREAM) == 2
    assert value(series, "streamdesk_group_pending", **GROUP) == 0
    assert value(series, "streamdesk_group_lag", **GROUP) == 0
    # Stopped: both consumers are still in the group, with no heartbeat behind them.
    assert value(series, "streamdesk_group_consumers", state="live", **GROUP) == 0
    assert value(series, "streamdesk_group_consumers", state="orphaned", **GROUP) == 2
    # The histogram counts every run, whichever worker ran it: six echoes, three failures.
    assert value(series, f"{RUNS}_count", type="demo.echo") == 6
    assert value(series, f"{RUNS}_bucket", type="demo.echo", le="+Inf") == 6
    assert value(series, f"{RUNS}_count", type="demo.fail") == 3
    assert 0 < value(series, f"{RUNS}_sum", type="demo.echo") < 6

    status, text, headers = get(exporter)
    assert status == 200 and headers["Content-Type"].startswith("text/plain; version=0.0.4")
    standalone = parse(text)
    # The same families, but for the Redis page's gauges: the console's own reading.
    console_only = {k for k in series if k[0].startswith("streamdesk_redis_")}
    assert console_only and not any(k[0].startswith("streamdesk_redis_") for k in standalone)
    assert {k: v for k, v in standalone.items() if k[0] not in CLOCKED} == {
        k: v for k, v in series.items() if k[0] not in CLOCKED and k not in console_only
    }


def test_metrics_command_refuses_a_scrape_without_the_token(r: redis.Redis, exporter: str) -> None:
    status, text, headers = get(exporter, token="wrong")
    assert status == 401 and headers["WWW-Authenticate"].startswith("Bearer ")
    assert "invalid bearer token" in text


def test_metrics_command_says_when_its_port_is_taken(
    r: redis.Redis, scrape_env: dict[str, str], exporter: str
) -> None:
    port = exporter.split(":")[2].split("/")[0]
    done = manage(scrape_env, "metrics", "--port", port)
    assert done.returncode == 1
    assert f"port {port} on 127.0.0.1 is taken" in done.stderr


def test_metrics_command_will_not_serve_beyond_loopback_unguarded(
    r: redis.Redis, worker_env: dict[str, str]
) -> None:
    env = {**worker_env, "STREAMDESK_METRICS_TOKEN": "", "STREAMDESK_METRICS_ALLOW": ""}
    done = manage(env, "metrics", "--bind", "0.0.0.0", "--port", "0")
    assert done.returncode == 1
    assert "STREAMDESK_METRICS_TOKEN" in done.stderr
