"""The console reads the recorded history: right rates on a fresh sampler's first tick, the
first page render carries the charts, and each socket gets only its page's charts."""

from __future__ import annotations

import json
import re

import pytest
import redis
from django.test import Client

from console.live import charts, realtime, ticker
from console.live.ticker import make_sampler
from console.runtime import keys
from tests.support.console import next_tick, open_socket
from tests.support.engine import STREAM
from workers.monitor.history import HistoryStore, to_point
from workers.monitor.recorder import Lease
from workers.monitor.sample import collect

PROCESSED_S = re.compile(r'data-metric="processed_s">([\d.,]+)/s<')
COUNTERS = {"processed": 300, "failed": 0, "dead_lettered": 0, "idempotency_hits": 0}


def recorded_six_seconds_ago(r: redis.Redis) -> int:
    """A stream whose counter is 300 now and was 0 in a point recorded 6 s ago (by the
    server's clock), as a recorder that ran before this console started left it."""
    r.xadd(STREAM, {"event": '{"type": "demo.echo", "data": {}}'})
    r.xgroup_create(STREAM, "agents", id="0")
    r.sadd(keys().streams_index, STREAM)
    r.hset(keys().stats(STREAM), mapping={k: 0 for k in COUNTERS})
    point = to_point(collect(r, keys()))
    seconds, micros = r.time()
    point["t"] = seconds * 1000 + micros // 1000 - 6_000
    assert Lease(r, keys().history_recorder, "earlier-recorder").hold()
    assert HistoryStore(r, keys()).record(point, "earlier-recorder") == 3
    r.hset(keys().stats(STREAM), mapping=COUNTERS)
    return int(point["t"])


@pytest.mark.django_db
def test_first_tick_after_a_restart_has_rates_from_the_recorded_history(
    r: redis.Redis,
) -> None:
    recorded_six_seconds_ago(r)
    tick = make_sampler().tick()  # a sampler that has never ticked: a restarted console
    assert tick is not None
    found = PROCESSED_S.search(tick.fragments[realtime.overview_key()])
    assert found, tick.fragments[realtime.overview_key()]
    # 300 processed over the ~6 s since the recorded point (a little more by now).
    assert 45.0 <= float(found.group(1)) <= 50.0
    throughput = tick.series[realtime.overview_key()][charts.stream_chart_keys(STREAM)[0]]
    assert throughput["full"] is False and len(throughput["ranges"]["5m"][0]) == 1


@pytest.mark.django_db
def test_hit_ratio_says_the_window_it_is_over(r: redis.Redis, staff_client: Client) -> None:
    """Beside hundreds processed in total, a ratio over the last seconds must say so."""
    recorded_six_seconds_ago(r)
    r.hset(keys().stats(STREAM), "idempotency_hits", 100)
    html = staff_client.get("/").content.decode()
    label = (
        r'data-metric="hit_ratio">hit ratio (\d+)% <span class="nowrap">\(last (\d+) s\)</span>'
        r'</div><div class="sub">100 total<'
    )
    found = re.search(label, html)
    assert found, html
    # 100 hits among 400 decided since the point recorded about 6 s ago.
    assert found.group(1) == "25" and 6 <= int(found.group(2)) <= 8


@pytest.mark.django_db
def test_first_page_render_carries_the_recorded_history(
    r: redis.Redis, staff_client: Client
) -> None:
    t = recorded_six_seconds_ago(r)
    response = staff_client.get("/")
    html = response.content.decode()
    raw = html.split('<script id="chart-series" type="application/json">')[1].split("</script>")[0]
    data = json.loads(raw)
    chart = data["charts"][charts.stream_chart_keys(STREAM)[0]]
    assert chart["full"] and chart["labels"] == ["added", "processed", "failed"]
    assert chart["ranges"]["5m"][0] == [t / 1000]
    assert chart["ranges"]["24h"][0] == [t / 1000]


@pytest.mark.django_db(transaction=True)
@pytest.mark.asyncio
async def test_a_socket_gets_only_its_pages_charts(r: redis.Redis, staff_client: Client) -> None:
    r.xadd(STREAM, {"event": '{"type": "demo.echo", "data": {}}'})
    r.xgroup_create(STREAM, "agents", id="0")
    r.sadd(keys().streams_index, STREAM)
    communicator = await open_socket(staff_client, [realtime.group_key(STREAM, "agents")])
    try:
        series = (await next_tick(communicator))["series"]
        part = realtime.group_key(STREAM, "agents")
        assert sorted(series) == sorted(
            [realtime.chart_key("backlog", part), realtime.chart_key("acked", part)]
        )
    finally:
        await communicator.disconnect()
        await ticker.stop()
