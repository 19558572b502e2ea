"""Every page against a real server and database: content, empty states, bad input, 404s."""

from __future__ import annotations

import json
import re

import pytest
import redis
from django.test import Client

from tests.support.console import process
from tests.support.engine import STREAM, xadd
from workers.core.config import EngineConfig
from workers.core.events import decode_envelope, event_hash
from workers.core.keys import dead_stream

pytestmark = pytest.mark.django_db(transaction=True)

GROUP_URL = f"/streams/{STREAM}/groups/agents/"


def text(response: object) -> str:
    return response.content.decode()  # type: ignore[attr-defined]


def test_overview_empty_state(r: redis.Redis, staff_client: Client) -> None:
    response = staff_client.get("/")
    assert response.status_code == 200
    assert "No streams yet" in text(response)
    assert 'data-live="overview"' in text(response)


def test_overview_shows_counts_and_groups(
    r: redis.Redis, staff_client: Client, traffic: list[str]
) -> None:
    body = text(staff_client.get("/"))
    assert STREAM in body
    assert 'data-metric="processed">3<' in body
    assert 'data-metric="length">4<' in body
    assert f'href="/streams/{STREAM}/groups/agents/"' in body
    assert f'href="/streams/{STREAM}/dead/">1<' in body


def test_overview_lag_unknown_is_not_zero(r: redis.Redis, staff_client: Client) -> None:
    ids = [xadd(r, {"type": "demo.echo", "data": {}}) for _ in range(3)]
    r.xgroup_create(STREAM, "agents", id="0")
    r.xdel(STREAM, ids[1])  # a delete inside the unread range: Redis cannot count the lag
    r.sadd("streamdesk:stats:streams", STREAM)
    body = text(staff_client.get("/"))
    info = r.xinfo_groups(STREAM)[0]
    if "lag" not in info:
        pytest.skip("this server does not report lag (Redis < 7)")
    assert info["lag"] is None
    assert 'data-metric="lag"><span title=' in body
    assert ">unknown</span>" in body


def test_workers_empty_state(r: redis.Redis, staff_client: Client) -> None:
    assert "No live workers" in text(staff_client.get("/workers/"))


def test_workers_lists_a_heartbeat(r: redis.Redis, staff_client: Client) -> None:
    now_ms = int(r.time()[0]) * 1000
    r.hset(
        "streamdesk:workers:w-1",
        mapping={
            "consumer": "w-1",
            "host": "box",
            "pid": "42",
            "state": "running",
            "started_ms": str(now_ms - 90_000),
            "processed": "7",
            "concurrency": "16",
            "stream": STREAM,
            "group": "agents",
            "inflight": "1",
            "current": "demo.echo 1-0",
        },
    )
    r.expire("streamdesk:workers:w-1", 30)
    r.zadd("streamdesk:workers", {"w-1": now_ms})
    body = text(staff_client.get("/workers/"))
    assert "w-1" in body and "box" in body and "demo.echo 1-0" in body
    assert re.search(r"1 min 3[0-4] s", body)  # the page is drawn a moment later on a busy box


def test_stream_page_lists_entries_newest_first(
    r: redis.Redis, staff_client: Client, traffic: list[str]
) -> None:
    body = text(staff_client.get(f"/streams/{STREAM}/"))
    positions = [body.index(entry_id) for entry_id in reversed(traffic)]
    assert positions == sorted(positions)
    assert "order/1" in body and "demo.fail" in body


def test_stream_page_paginates_by_id(r: redis.Redis, staff_client: Client) -> None:
    ids = [xadd(r, {"type": "demo.echo", "data": {"n": n}}) for n in range(60)]
    r.sadd("streamdesk:stats:streams", STREAM)
    first = text(staff_client.get(f"/streams/{STREAM}/"))
    shown = [i for i in ids if f"entries/{i}/" in first]
    assert shown == ids[10:]
    assert f"?before={ids[9]}" in first
    older = text(staff_client.get(f"/streams/{STREAM}/", {"before": ids[9]}))
    assert [i for i in ids if f"entries/{i}/" in older] == ids[:10]


def test_stream_page_htmx_answers_the_partial(
    r: redis.Redis, staff_client: Client, traffic: list[str]
) -> None:
    body = text(staff_client.get(f"/streams/{STREAM}/", headers={"HX-Request": "true"}))
    assert body.lstrip().startswith('<div id="entries">')
    assert "<html" not in body


def test_stream_page_bad_id_is_400(
    r: redis.Redis, staff_client: Client, traffic: list[str]
) -> None:
    response = staff_client.get(f"/streams/{STREAM}/", {"before": "yesterday"})
    assert response.status_code == 400
    assert "1700000000000-0" in text(response)


def test_missing_stream_is_404(r: redis.Redis, staff_client: Client) -> None:
    response = staff_client.get("/streams/no-such-stream/")
    assert response.status_code == 404
    assert "No stream named" in text(response)


def test_missing_group_is_404(r: redis.Redis, staff_client: Client, traffic: list[str]) -> None:
    response = staff_client.get(f"/streams/{STREAM}/groups/nobody/")
    assert response.status_code == 404


def _pending_setup(r: redis.Redis, count: int) -> list[str]:
    ids = [xadd(r, {"type": "demo.echo", "subject": f"s/{n}", "data": {}}) for n in range(count)]
    r.xgroup_create(STREAM, "agents", id="0")
    r.xreadgroup("agents", "alpha", {STREAM: ">"}, count=count // 2)
    r.xreadgroup("agents", "beta", {STREAM: ">"})
    r.sadd("streamdesk:stats:streams", STREAM)
    return ids


def test_group_page_lists_pending_entries_and_orphans(r: redis.Redis, staff_client: Client) -> None:
    ids = _pending_setup(r, 10)
    body = text(staff_client.get(GROUP_URL))
    assert all(f"entries/{entry_id}/" in body for entry_id in ids)
    assert "orphaned: no heartbeat" in body  # alpha and beta have no runworker heartbeat
    assert "s/3" in body


def test_group_page_filters_by_consumer(r: redis.Redis, staff_client: Client) -> None:
    ids = _pending_setup(r, 10)
    body = text(staff_client.get(GROUP_URL, {"consumer": "beta"}))
    assert [i for i in ids if f"entries/{i}/" in body] == ids[5:]


def test_group_page_filters_by_deliveries(r: redis.Redis, staff_client: Client) -> None:
    ids = _pending_setup(r, 10)
    r.xclaim(STREAM, "agents", "alpha", 0, [ids[7]])  # a second delivery for one entry
    body = text(staff_client.get(GROUP_URL, {"min_deliveries": 2}))
    assert [i for i in ids if f"entries/{i}/" in body] == [ids[7]]


def test_group_page_paginates(r: redis.Redis, staff_client: Client) -> None:
    ids = _pending_setup(r, 120)
    first = text(staff_client.get(GROUP_URL))
    assert [i for i in ids if f"entries/{i}/" in first] == ids[:50]
    second = text(staff_client.get(GROUP_URL, {"after": ids[49]}))
    assert [i for i in ids if f"entries/{i}/" in second] == ids[50:100]


def test_group_page_empty_pending(r: redis.Redis, staff_client: Client, traffic: list[str]) -> None:
    assert "No pending entries" in text(staff_client.get(GROUP_URL))


def test_event_page_shows_envelope_hash_and_timeline(
    r: redis.Redis, staff_client: Client, traffic: list[str]
) -> None:
    raw = r.xrange(STREAM, min=traffic[0], max=traffic[0])[0][1]["event"]
    body = text(staff_client.get(f"/streams/{STREAM}/entries/{traffic[0]}/"))
    assert event_hash(decode_envelope(raw)) in body
    assert "&quot;subject&quot;: &quot;order/0&quot;" in body
    assert "kind-published" in body and "kind-committed" in body
    assert "succeeded" in body


def test_event_page_timeline_shows_failures(
    r: redis.Redis, staff_client: Client, traffic: list[str]
) -> None:
    body = text(staff_client.get(f"/streams/{STREAM}/entries/{traffic[3]}/"))
    assert body.count("kind-failed") >= 2
    assert "kind-dead_lettered" in body
    assert "boom" in body


def test_event_page_truncates_large_payloads(r: redis.Redis, staff_client: Client) -> None:
    entry_id = xadd(r, {"type": "demo.echo", "data": {"blob": "x" * 50_000}})
    url = f"/streams/{STREAM}/entries/{entry_id}/"
    preview = text(staff_client.get(url))
    assert "Show all" in preview and "x" * 50_000 not in preview
    assert "x" * 50_000 in text(staff_client.get(url, {"full": "1"}))


def test_event_page_for_a_trimmed_entry_uses_the_database(
    r: redis.Redis, staff_client: Client, traffic: list[str]
) -> None:
    r.xdel(STREAM, traffic[1])
    body = text(staff_client.get(f"/streams/{STREAM}/entries/{traffic[1]}/"))
    assert "no longer holds this entry" in body
    assert "kind-committed" in body


def test_event_page_unknown_entry_is_404(r: redis.Redis, staff_client: Client) -> None:
    xadd(r, {"type": "demo.echo", "data": {}})
    assert staff_client.get(f"/streams/{STREAM}/entries/1-0/").status_code == 404


def test_dead_letters_page_links_to_the_event(
    r: redis.Redis, staff_client: Client, traffic: list[str]
) -> None:
    body = text(staff_client.get(f"/streams/{STREAM}/dead/"))
    raw = r.xrange(dead_stream(STREAM))[0][1]["event"]
    assert f'href="/events/{event_hash(decode_envelope(raw))}/"' in body
    assert "boom" in body and "demo.fail" in body
    event_page = text(staff_client.get(f"/events/{event_hash(decode_envelope(raw))}/"))
    assert "kind-dead_lettered" in event_page


def test_dead_letters_page_undecodable_event(r: redis.Redis, staff_client: Client) -> None:
    r.xadd(
        dead_stream(STREAM),
        {
            "event": "{not json",
            "entry_id": "5-0",
            "reason": "decode_error",
            "error": "bad JSON",
            "deliveries": "1",
            "by": "w",
        },
    )
    body = text(staff_client.get(f"/streams/{STREAM}/dead/"))
    assert "(not JSON)" in body and "decode_error" in body


def test_dead_letters_empty_state(r: redis.Redis, staff_client: Client) -> None:
    assert "No dead letters" in text(staff_client.get(f"/streams/{STREAM}/dead/"))


def test_event_by_unknown_hash_is_404(r: redis.Redis, staff_client: Client) -> None:
    assert staff_client.get(f"/events/{'0' * 64}/").status_code == 404


def test_static_htmx_is_vendored(staff_client: Client) -> None:
    from django.contrib.staticfiles import finders

    assert finders.find("vendor/htmx-2.0.4.min.js")
    assert json.dumps  # the console loads no script from a CDN:
    assert "https://" not in text(staff_client.get("/login/"))


def test_event_page_result_is_json(
    r: redis.Redis, staff_client: Client, traffic: list[str]
) -> None:
    body = text(staff_client.get(f"/streams/{STREAM}/entries/{traffic[0]}/"))
    assert "&quot;n&quot;: 0" in body  # JSON, not Python's {'n': 0}


def test_event_page_folds_tracebacks(
    r: redis.Redis, staff_client: Client, traffic: list[str]
) -> None:
    body = text(staff_client.get(f"/streams/{STREAM}/entries/{traffic[3]}/"))
    assert (
        '<details class="detail"><summary>workers.examples.demo.agents.DemoFailure: boom; retry in'
        in body
    )


def test_overview_lists_a_stream_a_worker_reads_before_any_event(
    r: redis.Redis, redis_url: str, config: EngineConfig, staff_client: Client
) -> None:
    process(redis_url, config)  # a worker on an empty stream: no event counted yet
    body = text(staff_client.get("/"))
    assert f'href="/streams/{STREAM}/"' in body
    assert 'data-metric="length">0<' in body


def test_overview_shows_the_outbox_backlog_next_to_its_stream(
    r: redis.Redis, staff_client: Client, traffic: list[str]
) -> None:
    from django.db import transaction

    from workers.producers.outbox import emit

    with transaction.atomic():
        emit("demo.echo", {"n": 1}, subject="order/1")
        emit("demo.echo", {"n": 2}, subject="order/2")
    body = text(staff_client.get("/"))
    assert 'Outbox: <strong data-metric="outbox">2</strong> rows waiting for the relay' in body
