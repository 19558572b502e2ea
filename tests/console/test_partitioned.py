"""A partitioned stream on the overview: one totals card (its partitions added up, each
listed with a link to its own page) above the partitions' own cards."""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import quote

import pytest
import redis
from django.test import Client

from tests.support.engine import AnyData
from workers.core.keys import dead_stream
from workers.core.partitions import Partitions
from workers.core.registry import Registry
from workers.producers.publish import build_envelope, publish_envelopes

pytestmark = pytest.mark.django_db(transaction=True)

LAYOUT = Partitions("streamdesk:events", 3)


def types() -> Registry:
    registry = Registry()
    registry.register("test.part", AnyData, lambda event, ctx: None)
    return registry


def metric(body: str, name: str) -> str:
    found = re.search(rf'data-metric="{name}">([^<]*)<', body)
    assert found, f"no {name} on the page"
    return found.group(1)


def test_the_overview_adds_a_partitioned_streams_partitions_up(
    r: redis.Redis, staff_client: Client
) -> None:
    envelopes = [
        build_envelope("test.part", {"n": n}, subject=f"s{n}", registry=types()) for n in range(30)
    ]
    publish_envelopes(r, LAYOUT, envelopes)
    for stream in LAYOUT.streams:
        r.xgroup_create(stream, "agents", id="0")
        r.sadd("streamdesk:stats:streams", stream)
    # Two entries read and not acknowledged in one partition, a dead letter in another.
    first, second = LAYOUT.streams[0], LAYOUT.streams[1]
    r.xreadgroup("agents", "w.0", {first: ">"}, count=2)
    r.xadd(dead_stream(second), {"event": "{}", "reason": "test"})
    lengths = [r.xlen(s) for s in LAYOUT.streams]
    assert sum(lengths) == 30 and all(lengths)

    body = staff_client.get("/").content.decode()
    title = '<a href="/streams/streamdesk:events/">streamdesk:events</a>'
    assert f'{title} <span class="muted">· 3 partitions, totals</span>' in body
    assert metric(body, "total-length") == "30"
    assert metric(body, "total-pending") == "2"
    assert metric(body, "total-dead") == "1"
    for stream, length in zip(LAYOUT.streams, lengths, strict=True):
        href = f'href="/streams/{quote(stream, safe=":")}/"'
        assert href in body
        row = body[body.index(href) :]
        assert f'<td class="num">{length}</td>' in row[: row.index("</tr>")]
    # Each partition's own card is there too, with its actions and charts.
    assert body.count('class="card"') >= 4


def test_an_unpartitioned_stream_has_no_totals_card(r: redis.Redis, staff_client: Client) -> None:
    publish_envelopes(
        r, Partitions("streamdesk:events"), [build_envelope("test.part", {}, registry=types())]
    )
    r.sadd("streamdesk:stats:streams", "streamdesk:events")
    body = staff_client.get("/").content.decode()
    assert "partitions, totals" not in body


def test_a_process_reading_partitions_counts_once_with_a_row_per_loop(
    r: redis.Redis, staff_client: Client
) -> None:
    now_ms = int(r.time()[0]) * 1000
    for pid in (101, 102):
        for i, stream in enumerate(LAYOUT.streams):
            consumer = f"host-{pid}.{i}"
            beat = {"consumer": consumer, "host": "host", "pid": pid, "stream": stream}
            r.hset(f"streamdesk:workers:{consumer}", mapping={**beat, "group": "agents"})
            r.zadd("streamdesk:workers", {consumer: now_ms})
    overview = staff_client.get("/").content.decode()
    assert "2 live workers (6 partition loops)" in overview
    page = staff_client.get("/workers/").content.decode()
    assert "2 processes reading partitions: a row per partition each reads" in page
    workers_table = page.split("<h2>Agents</h2>")[0]  # the agents' table follows it
    assert workers_table.count("<tr") == 1 + 6


def test_the_logical_stream_has_its_page_on_one_server_too(
    r: redis.Redis, staff_client: Client, settings: Any
) -> None:
    settings.STREAMDESK = {**settings.STREAMDESK, "partitions": 3}
    publish_envelopes(r, LAYOUT, [build_envelope("test.part", {}, registry=types())])
    for stream in LAYOUT.streams:
        r.sadd("streamdesk:stats:streams", stream)
    for page in ("/streams/streamdesk:events/", "/streams/streamdesk:events/dead/"):
        body = staff_client.get(page).content.decode()
        assert "3 partitions, totals" in body, page
        assert all(f'href="/streams/{quote(s, safe=":")}/dead/"' in body for s in LAYOUT.streams)
    settings.STREAMDESK = {**settings.STREAMDESK, "partitions": 1}
    assert staff_client.get("/streams/streamdesk:events/").status_code == 404
    dead = staff_client.get("/streams/streamdesk:events/dead/").content.decode()
    assert "No dead letters" in dead
