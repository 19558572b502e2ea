"""The JSON API door: token and session auth, roles, every action, field errors."""

from __future__ import annotations

from typing import Any

import pytest
import redis
from django.test import Client, override_settings

from console.edge.throttle import ThrottleConfig
from tests.support.console import API_GROUP, api_client, pending_entries
from tests.support.engine import STREAM
from tests.support.entries import live_consumer
from workers.core.keys import dead_stream
from workers.models import AuditRecord
from workers.operations.tokens import new_token

pytestmark = pytest.mark.django_db(transaction=True)

THROTTLE = ThrottleConfig(per_user=100, per_address=3, window_s=600)


def test_api_token_runs_an_action(r: redis.Redis, operator: Any) -> None:
    from workers.models import ApiToken

    ids = pending_entries(r)
    token, key_hash, prefix = new_token()
    ApiToken.objects.create(user=operator, name="t", key_hash=key_hash, prefix=prefix)
    response = Client().post(
        f"{API_GROUP}retry/",
        {"ids": ids},
        content_type="application/json",
        headers={"Authorization": f"Bearer {token}"},
    )
    assert response.status_code == 200, response.content
    assert response.json()["count"] == 4
    assert AuditRecord.objects.get().door == "api"


def test_api_bad_token_is_401(r: redis.Redis) -> None:
    response = Client().post(
        f"{API_GROUP}retry/",
        {"ids": []},
        content_type="application/json",
        headers={"Authorization": "Bearer sd_nope"},
    )
    assert response.status_code == 401


def test_api_viewer_is_403(r: redis.Redis, viewer_client: Client) -> None:
    assert viewer_client.get("/api/streams/").status_code == 200
    response = viewer_client.post(f"{API_GROUP}pause/", {}, content_type="application/json")
    assert response.status_code == 403


def test_api_session_post_needs_csrf(r: redis.Redis, operator: Any) -> None:
    client = Client(enforce_csrf_checks=True)
    client.force_login(operator)
    response = client.post(f"{API_GROUP}pause/", {}, content_type="application/json")
    assert response.status_code == 403
    assert "CSRF" in response.json()["error"]


def test_api_invalid_input_names_the_field(r: redis.Redis, operator_client: Client) -> None:
    response = operator_client.post(
        f"{API_GROUP}claim/", {"ids": ["nope"], "consumer": "x"}, content_type="application/json"
    )
    assert response.status_code == 400
    assert response.json()["error"].startswith("ids:")


def test_api_every_group_action(r: redis.Redis, operator: Any) -> None:
    ids = pending_entries(r, 6)
    live_consumer(r, "alive", STREAM)
    client, auth = api_client(operator)
    calls = [
        ("claim", {"ids": ids[:1], "consumer": "alive"}),
        ("retry", {"ids": ids[1:2]}),
        ("deadletter", {"ids": ids[2:3], "reason": "bad"}),
        ("claim-all", {"from_consumer": "gone-worker", "to_consumer": "alive"}),
        ("remove-consumer", {"consumer": "gone-worker"}),
        ("pause", {}),
        ("resume", {}),
    ]
    for action, body in calls:
        response = client.post(
            f"{API_GROUP}{action}/", body, content_type="application/json", headers=auth
        )
        assert response.status_code == 200, (action, response.content)
    done = list(AuditRecord.objects.order_by("id").values_list("action", "door", "outcome"))
    assert [a for a, _, _ in done] == [a.replace("deadletter", "dead-letter") for a, _ in calls]
    assert {d for _, d, _ in done} == {"api"} and {o for _, _, o in done} == {"ok"}


def test_api_purge_rerun_and_job(r: redis.Redis, operator: Any, traffic: list[str]) -> None:
    from workers.models import AgentRun

    client, auth = api_client(operator)
    [(dead_id, _)] = r.xrange(dead_stream(STREAM))
    response = client.post(
        f"/api/streams/{STREAM}/dead/purge/",
        {"ids": [dead_id], "reason": "noise"},
        content_type="application/json",
        headers=auth,
    )
    assert response.status_code == 200 and r.xlen(dead_stream(STREAM)) == 0
    run = AgentRun.objects.get(entry_id=traffic[0])
    response = client.post(
        f"/api/events/{run.event_hash}/rerun/",
        {"reason": "new prompt"},
        content_type="application/json",
        headers=auth,
    )
    assert response.status_code == 200, response.content
    preview = client.get(f"/api/streams/{STREAM}/dead/preview/", headers=auth).json()
    assert preview == {"matching": 0, "already_done": 0, "scanned": 0, "complete": True}
    assert client.get("/api/jobs/999/", headers=auth).status_code == 404


@override_settings(STREAMDESK_LOGIN_THROTTLE=THROTTLE)
def test_api_bad_tokens_are_throttled_per_address(r: redis.Redis, operator: Any) -> None:
    client, auth = api_client(operator)
    bad = {"Authorization": "Bearer sd_not-a-token"}
    for _ in range(3):
        assert client.get("/api/streams/", headers=bad).status_code == 401
    response = client.get("/api/streams/", headers=auth)
    assert response.status_code == 429
    assert "try again in 10 minutes" in response.json()["error"]
    other = Client(REMOTE_ADDR="10.9.9.9")
    assert other.get("/api/streams/", headers=auth).status_code == 200


def test_api_acts_on_a_stream_whose_name_holds_a_slash(r: redis.Redis, operator: Any) -> None:
    r.xgroup_create("orders/eu", "agents", id="0", mkstream=True)
    client, auth = api_client(operator)
    response = client.post(
        "/api/streams/orders~2Feu/groups/agents/pause/",
        {},
        content_type="application/json",
        headers=auth,
    )
    assert response.status_code == 200, response.content
    record = AuditRecord.objects.get()
    assert (record.action, record.stream, record.outcome) == ("pause", "orders/eu", "ok")


def test_api_streams_say_what_the_console_says(r: redis.Redis, viewer_client: Client) -> None:
    """A retry held back by the engine reads as waiting with its due time, and the group's
    health is the console's: the API is no second opinion."""
    from workers.core.keys import Keys
    from workers.from_settings import engine_config

    ids = pending_entries(r, count=1)
    live_consumer(r, "w1", group="agents")
    # What the settler writes for a retry 5 s away (workers/engine/settle.py and waits.py).
    claim_idle_ms = engine_config().claim_idle_ms
    r.xclaim(STREAM, "agents", "w1", 0, ids, idle=claim_idle_ms - 5_000, justid=True)
    due_ms = int(r.time()[0]) * 1000 + 5_000
    r.zadd(Keys().waits(STREAM, "agents"), {ids[0]: due_ms})

    [stream] = viewer_client.get("/api/streams/").json()["streams"]
    [group] = stream["groups"]
    assert group["oldest_pending"] == {"id": ids[0], "state": "waiting", "due_ms": due_ms}
    assert group["health"] == {"level": "ok", "reasons": []}
    assert stream["health"] == group["health"]
    assert group["live_consumers"] == 1

    r.delete(Keys().worker("w1"))  # the worker is gone
    [stream] = viewer_client.get("/api/streams/").json()["streams"]
    assert stream["health"] == {
        "level": "bad",
        "reasons": ["no live consumer to take 1 pending entry"],
    }
