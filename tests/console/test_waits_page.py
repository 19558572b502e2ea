"""The console's Waiting page and the waits API: viewers see the waiting runs, operators
approve, reject or cancel them; each answer audited with its door."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
import redis
from django.test import Client

from tests.support.console import HTMX, api_client
from tests.support.waits import run_hash, sleep, wait_for
from workers.core.keys import DEFAULT_STREAM
from workers.core.partitions import Partitions
from workers.models import AuditRecord

pytestmark = pytest.mark.django_db(transaction=True)
STREAM = DEFAULT_STREAM


def answers_published(r: redis.Redis) -> list[dict[str, Any]]:
    return [json.loads(fields["event"]) for _, fields in r.xrange(STREAM)]


def test_waits_page_lists_a_wait_with_buttons_for_operators(
    r: redis.Redis, redis_url: str, operator_client: Client
) -> None:
    wait_for(redis_url, run_hash(1), {"data.order_id": 42})
    body = operator_client.get("/waits/").content.decode()
    assert "<strong>1</strong> run waiting on" in body
    assert f'href="/events/{run_hash(1)}/"' in body
    assert "refund.answered" in body and "data.order_id=42" in body
    assert f"/waits/{run_hash(1)}/answer/" in body and f"/events/{run_hash(1)}/cancel/" in body
    assert 'aria-current="page">Waiting</a>' in body


def test_waits_page_viewer_sees_no_buttons(
    r: redis.Redis, redis_url: str, viewer_client: Client
) -> None:
    wait_for(redis_url, run_hash(1), {"data.order_id": 42})
    body = viewer_client.get("/waits/").content.decode()
    assert run_hash(1)[:10] in body and "/answer/" not in body
    assert "data-action=" not in body


def test_waits_page_sleep_has_no_answer_buttons(
    r: redis.Redis, redis_url: str, operator_client: Client
) -> None:
    sleep(redis_url, run_hash(2))
    body = operator_client.get("/waits/").content.decode()
    assert ">sleep<" in body and 'data-action="cancel"' in body
    assert 'data-action="approve"' not in body


def test_waits_page_empty_explains_how_a_run_waits(r: redis.Redis, viewer_client: Client) -> None:
    body = viewer_client.get("/waits/").content.decode()
    assert "No run is waiting" in body and "ctx.wait_for_event" in body and "docs/waits.md" in body


def test_waits_page_pages_newest_first(
    r: redis.Redis, redis_url: str, viewer_client: Client
) -> None:
    for n in range(27):
        wait_for(redis_url, run_hash(n), {"data.order_id": n})
    first = viewer_client.get("/waits/").content.decode()
    assert "<strong>27</strong> runs waiting" in first and "offset=25" in first
    assert first.index(run_hash(26)[:10]) < first.index(run_hash(25)[:10])
    second = viewer_client.get("/waits/?offset=25", headers=HTMX).content.decode()
    assert '<div id="waits"' in second[:200]
    assert run_hash(1)[:10] in second and run_hash(26)[:10] not in second


def test_approve_from_the_console_publishes_and_audits(
    r: redis.Redis, redis_url: str, operator_client: Client
) -> None:
    wait_for(redis_url, run_hash(1), {"data.order_id": 42})
    url = f"/waits/{run_hash(1)}/answer/"
    response = operator_client.post(
        url, {"approved": "true", "comment": "fine", "stream": STREAM}, headers=HTMX
    )
    assert response.status_code == 200, response.content
    assert response["HX-Trigger"] == "streamdesk:changed"
    [event] = answers_published(r)
    assert event["data"] == {"order_id": 42, "approved": True, "by": "ops", "comment": "fine"}
    record = AuditRecord.objects.get()
    assert (record.action, record.door, record.outcome, record.reason) == (
        "answer",
        "console",
        "ok",
        "fine",
    )


def test_reject_from_the_console_without_htmx_redirects(
    r: redis.Redis, redis_url: str, operator_client: Client
) -> None:
    wait_for(redis_url, run_hash(1), {"data.order_id": 42})
    response = operator_client.post(f"/waits/{run_hash(1)}/answer/", {"approved": "false"})
    assert response.status_code == 302
    assert answers_published(r)[0]["data"]["approved"] is False


def test_answer_a_sleep_from_the_console_is_409(
    r: redis.Redis, redis_url: str, operator_client: Client
) -> None:
    sleep(redis_url, run_hash(2))
    url = f"/waits/{run_hash(2)}/answer/"
    response = operator_client.post(url, {"approved": "true"}, headers=HTMX)
    assert response.status_code == 409 and "cancel it instead" in response.content.decode()


def test_answer_without_a_decision_is_400(
    r: redis.Redis, redis_url: str, operator_client: Client
) -> None:
    wait_for(redis_url, run_hash(1), {"data.order_id": 42})
    response = operator_client.post(f"/waits/{run_hash(1)}/answer/", {}, headers=HTMX)
    assert (
        response.status_code == 400
        and "true (approve) or false (reject)" in response.content.decode()
    )
    assert not r.exists(STREAM)


def test_answer_viewer_is_forbidden(r: redis.Redis, redis_url: str, viewer_client: Client) -> None:
    wait_for(redis_url, run_hash(1), {"data.order_id": 42})
    url = f"/waits/{run_hash(1)}/answer/"
    assert viewer_client.post(url, {"approved": "true"}).status_code == 403
    api = f"/api{url}"
    forbidden = viewer_client.post(api, {"approved": True}, content_type="application/json")
    assert forbidden.status_code == 403
    assert not AuditRecord.objects.exists() and not r.exists(STREAM)


def test_api_lists_waits_to_a_viewer_token(
    r: redis.Redis, redis_url: str, viewer_client: Client
) -> None:
    wait_for(redis_url, run_hash(1), {"data.order_id": 42})
    sleep(redis_url, run_hash(2))
    body = viewer_client.get("/api/waits/?limit=1").json()
    assert body["total"] == 2 and len(body["waits"]) == 1
    assert (body["waits"][0]["event_hash"], body["waits"][0]["kind"]) == (run_hash(2), "sleep")
    assert viewer_client.get("/api/waits/?limit=x").status_code == 400


def test_api_answer_with_a_token_is_audited_door_api(
    r: redis.Redis, redis_url: str, operator: Any
) -> None:
    wait_for(redis_url, run_hash(1), {"subject": "order/42"})
    client, bearer = api_client(operator)
    url = f"/api/waits/{run_hash(1)}/answer/"
    done = client.post(
        url, {"approved": False, "comment": "no"}, content_type="application/json", headers=bearer
    )
    assert done.status_code == 200, done.content
    assert (done.json()["outcome"], done.json()["count"]) == ("ok", 1)
    [event] = answers_published(r)
    assert event["subject"] == "order/42" and event["door"] == "api"
    assert event["data"] == {"approved": False, "by": "ops", "comment": "no"}
    assert AuditRecord.objects.get().door == "api"


def test_api_answer_refuses_bad_input(r: redis.Redis, redis_url: str, operator: Any) -> None:
    wait_for(redis_url, run_hash(1), {"subject": "order/42"})
    client, bearer = api_client(operator)
    url = f"/api/waits/{run_hash(1)}/answer/"

    def post(body: Any) -> Any:
        return client.post(url, body, content_type="application/json", headers=bearer)

    assert post({"approved": "yes"}).status_code == 400
    assert post({"approved": True, "dry_run": True}).status_code == 400
    assert (
        Client().post(url, {"approved": True}, content_type="application/json").status_code == 401
    )
    unknown = client.post(
        f"/api/waits/{run_hash(5)}/answer/",
        {"approved": True},
        content_type="application/json",
        headers=bearer,
    )
    assert unknown.status_code == 409 and "not waiting" in unknown.json()["error"]
    assert not r.exists(STREAM)


def test_overview_stream_card_counts_waiting_runs(
    r: redis.Redis, redis_url: str, viewer_client: Client
) -> None:
    wait_for(redis_url, run_hash(1), {"data.order_id": 42})
    r.xadd(STREAM, {"event": "{}"})
    r.sadd("streamdesk:stats:streams", STREAM)  # a stream the workers have counted on
    body = viewer_client.get("/").content.decode()
    found = re.search(r'data-metric="waiting"><a href="/waits/\?stream=([^"]+)">(\d+)</a>', body)
    assert found, body[body.find(">Waiting<") :][:300]
    assert found.groups() == ("streamdesk%3Aevents", "1")


def test_waits_page_of_a_partitioned_stream_links_each_partition(
    r: redis.Redis, redis_url: str, viewer_client: Client, settings: Any
) -> None:
    settings.STREAMDESK = {**settings.STREAMDESK, "partitions": 3}
    partitions = Partitions(STREAM, 3).streams
    wait_for(redis_url, run_hash(1), {"data.order_id": 1}, stream=partitions[2])
    wait_for(redis_url, run_hash(2), {"data.order_id": 2}, stream=partitions[2])
    body = viewer_client.get("/waits/").content.decode()
    # The first partition with waits is shown, each partition linked with its count.
    assert f'<strong>2</strong> runs waiting on <span class="mono">{partitions[2]}</span>' in body
    assert "(2 on all partitions)" in body
    assert f"{partitions[0]} (0)</a>" in body and f"{partitions[2]} (2)</a>" in body
    api = viewer_client.get("/api/waits/").json()
    assert api["total"] == 2 and api["streams"][partitions[2]] == 2
