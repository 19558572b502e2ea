"""Cancel from the console's event page and pending rows, and from the API: operators only,
the same operation behind each door, each audited with its door."""

from __future__ import annotations

from typing import Any

import pytest
import redis
from django.test import Client

from tests.support.console import ACT, API_GROUP, GROUP, HTMX, pending_entries
from tests.support.engine import STREAM
from workers.core.events import stored_hash
from workers.models import AgentRun, ApiToken, AuditRecord, RunStatus
from workers.operations.tokens import new_token

pytestmark = pytest.mark.django_db(transaction=True)


def hash_of(r: redis.Redis, entry_id: str) -> str:
    return stored_hash(r.xrange(STREAM, entry_id, entry_id)[0][1]["event"])


def test_cancel_event_page_shows_the_button_to_an_operator_only(
    r: redis.Redis, operator_client: Client, viewer_client: Client
) -> None:
    [entry_id, *_] = pending_entries(r)
    page = f"/streams/{STREAM}/entries/{entry_id}/"
    body = operator_client.get(page).content.decode()
    assert f"/events/{hash_of(r, entry_id)}/cancel/" in body and "hx-confirm" in body
    assert "/cancel/" not in viewer_client.get(page).content.decode()


def test_cancel_from_the_event_page_ends_a_waiting_run_cancelled(
    r: redis.Redis, operator_client: Client
) -> None:
    [entry_id, *_] = pending_entries(r)
    event_hash = hash_of(r, entry_id)
    url = f"/events/{event_hash}/cancel/"
    response = operator_client.post(url, {"reason": "customer withdrew"}, headers=HTMX)
    assert response.status_code == 200, response.content
    assert response["HX-Trigger"] == "streamdesk:changed"
    assert AgentRun.objects.get(event_hash=event_hash).status == RunStatus.CANCELLED
    record = AuditRecord.objects.get(action="cancel")
    assert (record.door, record.outcome, record.reason) == ("console", "ok", "customer withdrew")
    again = operator_client.post(url, {}, headers=HTMX)
    assert again.status_code == 409 and "already finished" in again.content.decode()


def test_cancel_selected_pending_rows(r: redis.Redis, operator_client: Client) -> None:
    ids = pending_entries(r)
    assert ">Cancel</button>" in operator_client.get(GROUP).content.decode()
    response = operator_client.post(f"{ACT}cancel/", {"ids": ids[:2]}, headers=HTMX)
    assert response.status_code == 200, response.content
    assert int(r.xpending(STREAM, "agents")["pending"]) == 2
    cancelled = AgentRun.objects.filter(status=RunStatus.CANCELLED)
    assert sorted(cancelled.values_list("entry_id", flat=True)) == sorted(ids[:2])


def test_cancel_viewer_is_forbidden(r: redis.Redis, viewer_client: Client) -> None:
    [entry_id, *_] = pending_entries(r)
    url = f"/events/{hash_of(r, entry_id)}/cancel/"
    assert viewer_client.post(url, {}).status_code == 403
    assert viewer_client.post(f"/api{url}", {}, content_type="application/json").status_code == 403
    assert not AuditRecord.objects.exists()


def test_cancel_api_with_a_token_answers_the_outcome(r: redis.Redis, operator: Any) -> None:
    [entry_id, *_] = pending_entries(r)
    token, key_hash, prefix = new_token()
    ApiToken.objects.create(user=operator, name="t", key_hash=key_hash, prefix=prefix)
    bearer = {"Authorization": f"Bearer {token}"}
    url = f"/api/events/{hash_of(r, entry_id)}/cancel/"

    done = Client().post(url, {"reason": "r"}, content_type="application/json", headers=bearer)
    assert done.status_code == 200, done.content
    assert (done.json()["outcome"], done.json()["count"]) == ("ok", 1)
    again = Client().post(url, {}, content_type="application/json", headers=bearer)
    assert again.status_code == 409 and "already finished" in again.json()["error"]
    odd = Client().post(url, {"dry_run": True}, content_type="application/json", headers=bearer)
    assert odd.status_code == 400  # a field cancel does not take is refused, not ignored
    rows = Client().post(
        f"{API_GROUP}cancel/", {"ids": ["9-9"]}, content_type="application/json", headers=bearer
    )
    assert rows.status_code == 200 and rows.json()["outcome"] == "noop"
    assert set(AuditRecord.objects.values_list("door", flat=True)) == {"api"}
