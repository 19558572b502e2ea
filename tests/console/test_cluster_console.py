"""The console and its API on a real 3-master cluster with 3 partitions: every page draws
(the sampler's scripts and clock go through a cluster pipeline), the logical stream has a
page with a row per partition, the API takes the logical stream name (a filter acts on each
partition, ids must name one), the history is recorded, a failed sign-in is counted and a
webhook body is published once, on whichever master serves its partition."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, cast
from urllib.parse import quote

import pytest
from django.test import Client
from redis.cluster import RedisCluster

from tests.support.cluster import cluster as cluster
from tests.support.cluster import rc as rc
from tests.support.console import api_client
from tests.support.engine import AnyData
from workers import from_settings
from workers.core.errors import NotReplicated
from workers.core.keys import Keys, dead_stream
from workers.core.partitions import Partitions
from workers.core.registry import Registry
from workers.models import BulkJob
from workers.monitor.history import RESOLUTIONS, HistoryReader, HistoryStore
from workers.monitor.recorder import Recorder
from workers.operations import jobs
from workers.producers.publish import build_envelope, publish_envelopes
from workers.producers.webhooks.replay import OncePublisher
from workers.redis.cluster import LocalCluster
from workers.redis.replication import Durability

pytestmark = pytest.mark.django_db(transaction=True)

STREAM = "streamdesk:events"
LAYOUT = Partitions(STREAM, 3, tagged=True)
KEYS = Keys()


@pytest.fixture(autouse=True)
def console_on_cluster(cluster: LocalCluster, settings: Any) -> Iterator[None]:
    """The console's settings pointing at the cluster."""
    settings.REDIS_URL = cluster.url
    settings.STREAMDESK = {**settings.STREAMDESK, "partitions": 3}
    from_settings._client.cache_clear()
    yield
    from_settings._client.cache_clear()


def types() -> Registry:
    registry = Registry()
    registry.register("test.part", AnyData, lambda event, ctx: None)
    return registry


def letters(rc: RedisCluster) -> dict[str, int]:
    return {s: int(rc.xlen(dead_stream(s))) for s in LAYOUT.streams}


@pytest.fixture
def partitioned(rc: RedisCluster) -> dict[str, int]:
    """30 events over the partitions, each with its group; in each partition two entries
    read and not acknowledged and a dead letter per partition index (0, 1, 2)."""
    envelopes = [
        build_envelope("test.part", {"n": n}, subject=f"s{n}", registry=types()) for n in range(30)
    ]
    publish_envelopes(cast(Any, rc), LAYOUT, envelopes)
    for i, stream in enumerate(LAYOUT.streams):
        rc.xgroup_create(stream, "agents", id="0")
        rc.sadd(KEYS.streams_index, stream)
        rc.xreadgroup("agents", f"w.{i}", {stream: ">"}, count=2)
        for n in range(i):
            event = build_envelope("test.part", {"dead": n}, registry=types()).to_json()
            rc.xadd(dead_stream(stream), {"event": event, "reason": "max-deliveries"})
    return letters(rc)


def test_every_console_page_draws_on_a_cluster(
    rc: RedisCluster, partitioned: dict[str, int], staff_client: Client
) -> None:
    body = staff_client.get("/").content.decode()
    assert "3 partitions, totals" in body
    assert 'data-metric="total-length">30<' in body
    assert 'data-metric="total-pending">6<' in body
    assert 'data-metric="total-dead">3<' in body
    for stream in LAYOUT.streams:
        path = f"/streams/{quote(stream, safe=':')}/"
        for page in (path, f"{path}groups/agents/", f"{path}dead/"):
            response = staff_client.get(page)
            assert response.status_code == 200, (page, response.content[:300])
    workers = staff_client.get("/workers/")
    assert workers.status_code == 200
    streams = staff_client.get("/api/streams/").json()["streams"]
    assert {s["name"]: s["dead_letters"] for s in streams} == partitioned


def test_the_logical_stream_has_a_page_with_a_row_per_partition(
    rc: RedisCluster, partitioned: dict[str, int], staff_client: Client
) -> None:
    response = staff_client.get(f"/streams/{STREAM}/")
    assert response.status_code == 200
    body = response.content.decode()
    assert 'data-metric="total-dead">3<' in body
    for stream, dead in partitioned.items():
        href = f'href="/streams/{quote(stream, safe=":")}/dead/"'
        row = body[body.index(href) :]
        assert f">{dead}</a>" in row[: row.index("</tr>")]
    # Its dead letters are its partitions': the page says where, not "No dead letters".
    dead_page = staff_client.get(f"/streams/{STREAM}/dead/").content.decode()
    assert "3 partitions, totals" in dead_page and "No dead letters" not in dead_page
    # The page refreshes itself (htmx): the fragment alone.
    fragment = staff_client.get(f"/streams/{STREAM}/", headers={"HX-Request": "true"})
    assert fragment.content.decode().lstrip().startswith(("{% load", "<section"))


def test_the_api_takes_the_logical_stream_name_on_a_cluster(
    rc: RedisCluster, partitioned: dict[str, int], operator: Any
) -> None:
    client, auth = api_client(operator)
    logical = f"/api/streams/{STREAM}"
    # Ids name entries of one partition: the logical stream says which to use.
    by_id = client.post(
        f"{logical}/dead/redrive/", {"ids": ["1-0"]}, content_type="application/json", headers=auth
    )
    assert by_id.status_code == 400 and by_id.json()["partitions"] == LAYOUT.streams

    # A filter acts on each partition: one outcome (and audit record) each.
    response = client.post(
        f"{logical}/dead/redrive/",
        {"all": True, "type": "test.part"},
        content_type="application/json",
        headers=auth,
    )
    assert response.status_code == 202, response.content
    outcomes = response.json()["partitions"]
    assert [o["stream"] for o in outcomes] == LAYOUT.streams
    for outcome in outcomes:
        job = jobs.run(outcome["job_id"], rc, KEYS, "test-runner")
        assert job.done == partitioned[job.stream], (job.stream, job.status, job.error)
    assert sum(letters(rc).values()) == 0
    assert BulkJob.objects.count() == 3
    # Each letter went back to its own partition, marked as a retry.
    for stream, dead in partitioned.items():
        retries = [f for _, f in rc.xrange(stream) if "retry_of" in f]
        assert len(retries) == dead

    claim_all = client.post(
        f"{logical}/groups/agents/claim-all/",
        {"consumer": "w.0", "to": "w.1"},
        content_type="application/json",
        headers=auth,
    )
    assert (
        claim_all.status_code == 400
        and "claim-all acts on the entries of one" in (claim_all.json()["error"])
    )
    # Pause and resume act on the logical stream: one flag for every partition.
    paused = client.post(
        f"{logical}/groups/agents/pause/", {}, content_type="application/json", headers=auth
    )
    assert paused.status_code == 200, paused.content
    assert rc.get(KEYS.paused(LAYOUT.streams[2], "agents"))
    resumed = client.post(
        f"{logical}/groups/agents/resume/", {}, content_type="application/json", headers=auth
    )
    assert resumed.status_code == 200 and not rc.exists(KEYS.paused(STREAM, "agents"))


def test_the_history_is_recorded_and_read_on_a_cluster(rc: RedisCluster) -> None:
    recorder = Recorder(cast(Any, rc), KEYS, "test-recorder")
    assert recorder.tick() == len(RESOLUTIONS)
    points = HistoryReader(HistoryStore(cast(Any, rc), KEYS)).read_all()
    assert all(len(points[r.name]) == 1 for r in RESOLUTIONS)


def test_a_failed_sign_in_is_counted_on_a_cluster(rc: RedisCluster, operator: Any) -> None:
    response = Client().post("/login/", {"username": "ops", "password": "wrong"})
    assert response.status_code == 200  # the form again, with its error
    assert "Wrong username or password" in response.content.decode()
    counted = [k for k in rc.scan_iter("streamdesk:{throttle}:*")]
    assert len(counted) == 2  # the user and the address


def test_a_webhook_body_is_published_once_on_its_partitions_master(rc: RedisCluster) -> None:
    publisher = OncePublisher(KEYS, 60)
    envelope = build_envelope("test.part", {"n": 1}, subject="s1", registry=types())
    stream = LAYOUT.stream_for("s1")
    first = publisher.publish(cast(Any, rc), stream, envelope, source="hook", body=b"{}")
    again = publisher.publish(cast(Any, rc), stream, envelope, source="hook", body=b"{}")
    assert not first.duplicate and again.duplicate and again.entry_id == first.entry_id
    assert rc.xlen(stream) == 1
    # Durable: the WAIT goes to that master too, which has no replica here to confirm.
    with pytest.raises(NotReplicated):
        publisher.publish(
            cast(Any, rc),
            stream,
            envelope,
            source="hook",
            body=b"other",
            durability=Durability(replicas=1, timeout_ms=100),
        )
