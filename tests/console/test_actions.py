"""The console's and the API's doors to the operator actions: roles, outcomes, audit."""

from __future__ import annotations

from typing import Any

import pytest
import redis
from django.test import Client

from tests.support.console import ACT, DEAD, GROUP, HTMX, dead_letters, pending_entries
from tests.support.engine import STREAM
from tests.support.entries import live_consumer
from workers.core.keys import dead_stream
from workers.models import AuditRecord, BulkJob

pytestmark = pytest.mark.django_db(transaction=True)


def test_group_page_operator_sees_buttons(r: redis.Redis, operator_client: Client) -> None:
    pending_entries(r)
    body = operator_client.get(GROUP).content.decode()
    assert "Retry now" in body and "Claim all" in body and "Pause group" in body


def test_group_page_viewer_sees_no_buttons(r: redis.Redis, viewer_client: Client) -> None:
    pending_entries(r)
    response = viewer_client.get(GROUP)
    body = response.content.decode()
    assert response.status_code == 200
    assert "Retry now" not in body and "Claim all" not in body and "Pause group" not in body
    assert 'name="ids"' not in body


def test_dead_letters_viewer_sees_no_buttons(r: redis.Redis, viewer_client: Client) -> None:
    dead_letters(r)
    body = viewer_client.get(DEAD).content.decode()
    assert "Retry all matching" not in body and 'name="ids"' not in body


@pytest.mark.parametrize(
    ("url", "data"),
    [
        (f"{ACT}claim/", {"ids": ["1-0"], "consumer": "x"}),
        (f"{ACT}retry/", {"ids": ["1-0"]}),
        (f"{ACT}deadletter/", {"ids": ["1-0"], "reason": "r"}),
        (f"{ACT}pause/", {}),
        (f"{DEAD}act/redrive/", {"ids": ["1-0"]}),
        (f"{DEAD}act/purge/", {"ids": ["1-0"], "reason": "r"}),
        (f"/events/{'0' * 64}/rerun/", {"reason": "r"}),
        ("/jobs/1/cancel/", {}),
    ],
)
def test_action_viewer_is_forbidden(
    r: redis.Redis, viewer_client: Client, url: str, data: dict[str, Any]
) -> None:
    assert viewer_client.post(url, data).status_code == 403
    assert not AuditRecord.objects.exists()


def test_action_needs_post(r: redis.Redis, operator_client: Client) -> None:
    assert operator_client.get(f"{ACT}retry/").status_code == 405


def test_retry_now_from_the_console_is_audited(r: redis.Redis, operator_client: Client) -> None:
    ids = pending_entries(r)
    response = operator_client.post(f"{ACT}retry/", {"ids": ids[:2]}, headers=HTMX)
    assert response.status_code == 200
    assert "2 done" in response.content.decode()
    assert response["HX-Trigger"] == "streamdesk:changed"
    record = AuditRecord.objects.get()
    assert (record.actor, record.door, record.action, record.count) == (
        "ops",
        "console",
        "retry",
        2,
    )


def test_claim_moves_entries(r: redis.Redis, operator_client: Client) -> None:
    ids = pending_entries(r)
    live_consumer(r, "rescuer", STREAM)
    operator_client.post(f"{ACT}claim/", {"ids": ids[:3], "consumer": "rescuer"}, headers=HTMX)
    owners = {
        p["message_id"]: p["consumer"] for p in r.xpending_range(STREAM, "agents", "-", "+", 10)
    }
    assert [owners[i] for i in ids] == ["rescuer"] * 3 + ["gone-worker"]


def test_dead_letter_needs_a_reason(r: redis.Redis, operator_client: Client) -> None:
    ids = pending_entries(r)
    response = operator_client.post(f"{ACT}deadletter/", {"ids": ids[:1]}, headers=HTMX)
    assert response.status_code == 400
    assert "reason" in response.content.decode()
    assert r.xlen(dead_stream(STREAM)) == 0


def test_remove_consumer_with_pending_is_refused(r: redis.Redis, operator_client: Client) -> None:
    pending_entries(r)
    response = operator_client.post(
        f"{ACT}remove-consumer/", {"consumer": "gone-worker"}, headers=HTMX
    )
    assert response.status_code == 409
    assert len(r.xinfo_consumers(STREAM, "agents")) == 1


def test_redrive_one_dead_letter_in_one_click(r: redis.Redis, operator_client: Client) -> None:
    dead = dead_letters(r)
    response = operator_client.post(f"{DEAD}act/redrive/", {"ids": [dead[0]]}, headers=HTMX)
    assert response.status_code == 200
    [(_, fields)] = r.xrange(STREAM)
    assert fields["retry_of"] == dead[0]
    assert [i for i, _ in r.xrange(dead_stream(STREAM))] == dead[1:]


def test_preview_counts_matching_dead_letters(r: redis.Redis, operator_client: Client) -> None:
    dead_letters(r, 3)
    body = operator_client.get(f"{DEAD}preview/", {"reason_is": "max-deliveries"}).content.decode()
    assert "3 dead letters match" in body


def test_audit_page_and_csv(r: redis.Redis, operator_client: Client) -> None:
    ids = pending_entries(r)
    operator_client.post(f"{ACT}retry/", {"ids": ids[:1]}, headers=HTMX)
    body = operator_client.get("/audit/", {"action": "retry"}).content.decode()
    assert "retry" in body and "ops" in body
    csv_lines = b"".join(operator_client.get("/audit/", {"format": "csv"}).streaming_content)
    lines = csv_lines.decode().splitlines()
    assert lines[0].startswith("at,actor,door,action") and len(lines) == 2


def test_bulk_redrive_by_filter_is_a_job(r: redis.Redis, operator_client: Client) -> None:
    dead_letters(r, 3)
    response = operator_client.post(
        f"/api/streams/{STREAM}/dead/redrive/",
        {"all": True, "reason_is": "max-deliveries"},
        content_type="application/json",
    )
    assert response.status_code == 202, response.content
    job = BulkJob.objects.get(pk=response.json()["job_id"])
    assert job.status == "queued" and job.action == "redrive"
    assert "Cancel" in operator_client.get("/jobs/").content.decode()


def test_dead_letter_by_hand_shows_on_the_timeline(r: redis.Redis, operator_client: Client) -> None:
    ids = pending_entries(r)
    response = operator_client.post(
        f"{ACT}deadletter/", {"ids": ids[:1], "reason": "bad customer data"}, headers=HTMX
    )
    assert response.status_code == 200, response.content
    assert r.xlen(dead_stream(STREAM)) == 1
    body = operator_client.get(f"/streams/{STREAM}/entries/{ids[0]}/").content.decode()
    assert "kind-dead_lettered" in body and "by ops: bad customer data" in body


def test_paused_group_says_so(r: redis.Redis, operator_client: Client) -> None:
    pending_entries(r)
    operator_client.post(f"{ACT}pause/", {}, headers=HTMX)
    body = operator_client.get(GROUP).content.decode()
    assert "<strong>Paused</strong> by ops" in body
    assert "paused by ops" in operator_client.get("/").content.decode()
    operator_client.post(f"{ACT}resume/", {}, headers=HTMX)
    assert "<strong>Paused</strong>" not in operator_client.get(GROUP).content.decode()


def test_admin_exports_audit_as_csv(r: redis.Redis, db: Any) -> None:
    from django.contrib.auth.models import User

    ids = pending_entries(r)
    admin_user = User.objects.create_superuser("root", "", "pw-root")
    client = Client()
    client.force_login(admin_user)
    client.post(f"{ACT}retry/", {"ids": ids[:1]}, headers=HTMX)
    record = AuditRecord.objects.get()
    assert client.get("/admin/workers/auditrecord/").status_code == 200
    response = client.post(
        "/admin/workers/auditrecord/",
        {"action": "export_csv", "_selected_action": [record.pk]},
    )
    assert response["Content-Type"] == "text/csv"
    assert b"retry" in response.content and b"root" in response.content


def test_claim_all_then_remove_the_orphan(r: redis.Redis, operator_client: Client) -> None:
    pending_entries(r)
    live_consumer(r, "alive", STREAM)
    response = operator_client.post(
        f"{ACT}claim-all/", {"from_consumer": "gone-worker", "to_consumer": "alive"}, headers=HTMX
    )
    assert response.status_code == 200, response.content
    assert r.xpending(STREAM, "agents")["consumers"] == [{"name": "alive", "pending": 4}]
    response = operator_client.post(
        f"{ACT}remove-consumer/", {"consumer": "gone-worker"}, headers=HTMX
    )
    assert response.status_code == 200
    assert [c["name"] for c in r.xinfo_consumers(STREAM, "agents")] == ["alive"]


def test_purge_from_the_console_needs_a_reason(r: redis.Redis, operator_client: Client) -> None:
    dead = dead_letters(r, 2)
    assert operator_client.post(f"{DEAD}act/purge/", {"ids": dead}, headers=HTMX).status_code == 400
    response = operator_client.post(
        f"{DEAD}act/purge/", {"ids": dead[:1], "reason": "test data"}, headers=HTMX
    )
    assert response.status_code == 200
    assert [i for i, _ in r.xrange(dead_stream(STREAM))] == dead[1:]
    assert AuditRecord.objects.get().reason == "test data"


def test_dry_run_changes_nothing(r: redis.Redis, operator_client: Client) -> None:
    dead = dead_letters(r, 2)
    response = operator_client.post(
        f"/api/streams/{STREAM}/dead/redrive/",
        {"ids": dead, "dry_run": True},
        content_type="application/json",
    )
    assert response.json()["outcome"] == "dry-run" and response.json()["count"] == 2
    assert r.xlen(dead_stream(STREAM)) == 2 and not r.exists(STREAM)


def test_force_rerun_from_the_event_page(
    r: redis.Redis, operator_client: Client, traffic: list[str]
) -> None:
    from workers.models import AgentRun

    run = AgentRun.objects.get(entry_id=traffic[0])
    url = f"/events/{run.event_hash}/rerun/"
    assert operator_client.post(url, {}, headers=HTMX).status_code == 400  # no reason
    response = operator_client.post(url, {"reason": "model upgraded"}, headers=HTMX)
    assert response.status_code == 200, response.content
    assert r.xlen(STREAM) == len(traffic) + 1  # re-published
    assert AgentRun.objects.get(pk=run.pk).status == "failed"


def test_cancel_a_job_from_the_console(r: redis.Redis, operator_client: Client) -> None:
    dead_letters(r, 3)
    job_id = operator_client.post(
        f"/api/streams/{STREAM}/dead/redrive/", {"all": True}, content_type="application/json"
    ).json()["job_id"]
    response = operator_client.post(f"/jobs/{job_id}/cancel/", {}, headers=HTMX)
    assert response.status_code == 200, response.content
    assert BulkJob.objects.get(pk=job_id).status == "cancelled"


def test_event_by_hash_after_a_redrive_shows_both_entries_in_order(
    r: redis.Redis, operator_client: Client, traffic: list[str]
) -> None:
    from workers.models import AgentRun

    [(dead_id, _)] = r.xrange(dead_stream(STREAM))
    operator_client.post(f"{DEAD}act/redrive/", {"ids": [dead_id]}, headers=HTMX)
    [(new_id, _)] = r.xrevrange(STREAM, count=1)
    run = AgentRun.objects.get(entry_id=traffic[3])
    AgentRun.objects.filter(pk=run.pk).update(entry_id=new_id)  # as the retry's delivery would
    body = operator_client.get(f"/events/{run.event_hash}/").content.decode()
    assert "no longer holds" not in body
    kinds = [k for k in body.split('class="kind-')[1:]]
    order = [k.split('"', 1)[0] for k in kinds]
    assert order[0] == "published" and order.count("published") == 2
    assert order.index("dead_lettered") < len(order) - 1 - order[::-1].index("published")
