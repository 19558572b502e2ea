"""An action that did nothing says so: not the green "ok" of one that did (issue 14 item 9's
noop outcome, as the console shows it)."""

from __future__ import annotations

import json

import pytest
import redis
from django.test import Client

from workers.models import AuditRecord

pytestmark = pytest.mark.django_db(transaction=True)

STREAM = "streamdesk:events"
ACT = f"/streams/{STREAM}/groups/agents/act/"
HTMX = {"HX-Request": "true"}


def test_retry_now_of_entries_no_longer_pending_says_nothing_was_done(
    r: redis.Redis, operator_client: Client
) -> None:
    entry = r.xadd(STREAM, {"event": json.dumps({"type": "demo.echo", "id": "e", "data": {}})})
    r.xgroup_create(STREAM, "agents", id="0")
    r.sadd("streamdesk:stats:streams", STREAM)

    response = operator_client.post(f"{ACT}retry/", {"ids": [entry]}, headers=HTMX)

    body = response.content.decode()
    assert response.status_code == 200
    assert 'class="outcome warn"' in body and "Nothing done." in body
    assert "0 done, 1 skipped" in body
    assert AuditRecord.objects.get().outcome == "noop"


def test_an_action_that_did_something_stays_ok(r: redis.Redis, operator_client: Client) -> None:
    entry = r.xadd(STREAM, {"event": json.dumps({"type": "demo.echo", "id": "e", "data": {}})})
    r.xgroup_create(STREAM, "agents", id="0")
    r.xreadgroup("agents", "gone", {STREAM: ">"})
    r.sadd("streamdesk:stats:streams", STREAM)

    body = operator_client.post(f"{ACT}retry/", {"ids": [entry]}, headers=HTMX).content.decode()

    assert 'class="outcome ok"' in body and "1 done" in body
    assert "Nothing done." not in body
