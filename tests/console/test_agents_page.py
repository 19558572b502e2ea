"""By agent, on a real Redis and database: a real worker runs two agents in-process (so the
engine writes the run duration histogram and the runs), the deployment's recorder records
points around it, and the overview's table, an agent's page and ``/api/agents/`` show their
rates, percentiles, failure shares and charts."""

from __future__ import annotations

import asyncio
import json
import re
from dataclasses import replace
from typing import Any

import pytest
import redis
from django.test import Client

from console.live import charts, realtime
from console.runtime import keys
from tests.support.engine import AnyData, run_burst, xadd
from tests.support.wait import wait_for
from workers.core.config import EngineConfig
from workers.core.registry import Registry
from workers.monitor.recorder import Cadence, Recorder
from workers.redis.pipelines import server_ms

pytestmark = pytest.mark.django_db(transaction=True)


def two_agents() -> Registry:
    registry = Registry()

    @registry.agent("t.steady", schema=AnyData)
    async def steady(event: Any, ctx: Any) -> None:
        await asyncio.sleep(0.03)  # (0.025, 0.05] s: p50 inside that bucket

    @registry.agent("t.broken", schema=AnyData)
    async def broken(event: Any, ctx: Any) -> None:
        raise RuntimeError("always")

    return registry


def next_second(r: redis.Redis) -> None:
    """Wait for the server's clock to enter a new second: the recorder's next point opens a
    new 1 s bucket."""
    second = server_ms(r) // 1000
    wait_for(lambda: server_ms(r) // 1000 > second, timeout_s=2)


@pytest.fixture
def ran(r: redis.Redis, redis_url: str, config: EngineConfig) -> None:
    """20 steady runs and 2 broken events (each tried max_deliveries=1 time, then dead),
    with recorded points before and after."""
    recorder = Recorder(r, keys(), "test-recorder", Cadence(keepalive_ms=60_000))
    r.sadd(keys().streams_index, "streamdesk:events")
    assert recorder.tick() == 3  # the point before any run
    for n in range(20):
        xadd(r, {"type": "t.steady", "source": "t", "id": f"s{n}", "data": {}})
    for n in range(2):
        xadd(r, {"type": "t.broken", "source": "t", "id": f"b{n}", "data": {}})
    next_second(r)
    run_burst(redis_url, replace(config, max_deliveries=1), two_agents())
    assert (recorder.tick() or 0) >= 1  # the change, with each type's histogram
    recorder.release()


def chart_series(html: str) -> dict[str, Any]:
    raw = html.split('<script id="chart-series" type="application/json">')[1].split("</script>")[0]
    series: dict[str, Any] = json.loads(raw)
    return series


def cell(html: str, agent: str, metric: str) -> str:
    row = html.split(f'<tr data-agent="{agent}">')[1].split("</tr>")[0]
    found = re.search(rf'data-metric="{metric}">(.*?)</td>', row, re.S)
    assert found, row
    return re.sub(r"<[^>]+>", "", found.group(1)).strip()


def test_overview_lists_each_agent_with_its_figures(ran: None, staff_client: Client) -> None:
    html = staff_client.get("/").content.decode()
    assert 'href="/agents/t.steady/"' in html and 'href="/agents/t.broken/"' in html
    # Every steady run took 30 ms and a little more: all in the (25, 50] ms bucket.
    for q in ("p50", "p95", "p99"):
        assert cell(html, "t.steady", q).endswith(" ms"), cell(html, "t.steady", q)
        assert 25 <= float(cell(html, "t.steady", q).split()[0]) <= 50
    assert cell(html, "t.steady", "failed_pct") == "0.0% of 20"
    assert cell(html, "t.broken", "failed_pct") == "100.0% of 2"
    assert cell(html, "t.steady", "tokens") == "0"


def test_agent_page_shows_figures_failures_and_charts(ran: None, staff_client: Client) -> None:
    response = staff_client.get("/agents/t.steady/")
    assert response.status_code == 200
    html = response.content.decode()
    assert re.search(r'data-metric="runs">20<', html) is None  # the total is in the sub line
    assert "20 total" in html
    assert 'data-window="1h"' in html and 'data-metric="failed_1h">0.0%<' in html
    series = chart_series(html)
    part = realtime.agent_key("t.steady")
    runs_key, durations_key, tokens_key = (
        realtime.chart_key(kind, part) for kind in charts.AGENT_KINDS
    )
    assert set(series["charts"]) == {runs_key, durations_key, tokens_key}
    durations = series["charts"][durations_key]["ranges"]["5m"]
    p50s = [v for v in durations[1] if v is not None]
    # The 20 runs ended between the two recorded points: one interval's p50, in its bucket.
    assert len(p50s) == 1 and 25 <= p50s[0] <= 50  # ms
    runs = series["charts"][runs_key]["ranges"]["5m"][1]
    assert any(v and v > 0 for v in runs), runs


def test_agent_page_of_a_failing_agent_says_every_run_failed(
    ran: None, staff_client: Client
) -> None:
    html = staff_client.get("/agents/t.broken/").content.decode()
    assert 'data-metric="failed_1h">100.0%<' in html


def test_agent_page_of_an_unknown_type_is_404(ran: None, staff_client: Client) -> None:
    assert staff_client.get("/agents/t.never/").status_code == 404


def test_api_agents_returns_the_same_figures(ran: None, staff_client: Client) -> None:
    response = staff_client.get("/api/agents/")
    assert response.status_code == 200
    agents = {a["event_type"]: a for a in response.json()["agents"]}
    steady = agents["t.steady"]
    assert steady["runs"] == 20 and 0.025 <= steady["p50_s"] <= 0.05
    assert steady["failed"]["1h"] == {"ended": 20, "failed": 0, "pct": 0.0, "complete": True}
    assert agents["t.broken"]["failed"]["24h"]["pct"] == 100.0
    assert steady["url"] == "/agents/t.steady/"


def test_failure_shares_count_each_window_and_say_when_the_cap_cut_one() -> None:
    from datetime import UTC, datetime, timedelta

    from console.reads.agent_runs import count

    now = datetime(2026, 12, 6, 12, 0, tzinfo=UTC)
    rows = [
        ("t.a", "succeeded", now - timedelta(minutes=1)),
        ("t.a", "failed", now - timedelta(minutes=2)),
        ("t.a", "running", now - timedelta(minutes=3)),  # no outcome yet: not counted
        ("t.a", "dead", now - timedelta(minutes=30)),
    ]
    # The cap stopped at a run 40 minutes old: the hour and the day are the newest runs only.
    shares = count(rows, now, reached=now - timedelta(minutes=40))["t.a"]
    assert (shares["5m"].ended, shares["5m"].failed, shares["5m"].complete) == (2, 1, True)
    assert (shares["1h"].ended, shares["1h"].failed, shares["1h"].complete) == (3, 2, False)
    assert shares["1h"].pct == pytest.approx(200 / 3)


def test_a_tick_carries_each_agents_figures_and_chart_rows(ran: None) -> None:
    from console.live.ticker import make_sampler

    tick = make_sampler().tick()  # the one render every tab of the page shares
    assert tick is not None
    part = realtime.agent_key("t.steady")
    assert "20 total" in tick.fragments[part]
    assert set(tick.series[part]) == {realtime.chart_key(k, part) for k in charts.AGENT_KINDS}
