"""The Replay page: its preview reads only, its start is an operator's audited action that
queues a replay job, and its jobs' progress is the Jobs table's."""

from __future__ import annotations

import pytest
import redis
from django.test import Client

from tests.support.console import HTMX, text
from tests.support.replay import copies, publish, run_job
from workers.models import AuditRecord, BulkJob

pytestmark = pytest.mark.django_db(transaction=True)

ECHO = "demo.echo"


def test_replay_page_offers_the_form_to_operators_only(
    r: redis.Redis, operator_client: Client, viewer_client: Client
) -> None:
    page = text(operator_client.get("/replay/"))
    assert 'id="replay-form"' in page and f'<option value="{ECHO}"' in page
    assert 'data-live="jobs"' in page and 'href="/replay/" aria-current="page"' in page
    watched = viewer_client.get("/replay/")
    assert watched.status_code == 200 and 'id="replay-form"' not in text(watched)
    assert "Only operators may start a replay" in text(watched)


def test_replay_preview_counts_and_writes_nothing(r: redis.Redis, operator_client: Client) -> None:
    publish(r, 12, type_=ECHO)
    publish(r, 3, type_="demo.sleep", start=100)
    length = r.xlen("streamdesk:events")
    got = operator_client.get("/replay/preview/", {"agent": ECHO, "force": "on"}, headers=HTMX)
    body = text(got)
    assert got.status_code == 200
    assert "<strong>12</strong> events would run" in body and "15 entries in range" in body
    assert 'name="force" value="on"' in body and "Start replay" in body
    assert r.xlen("streamdesk:events") == length
    assert not AuditRecord.objects.exists() and not BulkJob.objects.exists()


@pytest.mark.parametrize(
    ("query", "message"),
    [
        ({"agent": "nobody"}, "Select a valid choice"),
        ({"agent": ECHO, "start": "soon"}, "from: &#x27;soon&#x27; is neither"),
        ({"agent": ECHO, "start": "2001-01-01", "end": "2001-01-02"}, "nothing in range"),
    ],
)
def test_replay_preview_says_what_is_wrong(
    r: redis.Redis, operator_client: Client, query: dict[str, str], message: str
) -> None:
    publish(r, 2, type_=ECHO)
    got = operator_client.get("/replay/preview/", query, headers=HTMX)
    assert got.status_code == 400 and message in text(got)


def test_replay_preview_and_start_are_for_operators(r: redis.Redis, viewer_client: Client) -> None:
    publish(r, 2, type_=ECHO)
    assert viewer_client.get("/replay/preview/", {"agent": ECHO}).status_code == 403
    assert viewer_client.post("/replay/start/", {"agent": ECHO}).status_code == 403
    assert not BulkJob.objects.exists()


def test_replay_start_queues_an_audited_job(r: redis.Redis, operator_client: Client) -> None:
    ids = publish(r, 8, type_=ECHO)
    form = {"agent": ECHO, "force": "on", "reason": "prompt v2", "start": ids[2]}
    got = operator_client.post("/replay/start/", form, headers=HTMX)
    assert got.status_code == 200 and "Replay queued as" in text(got)
    job = BulkJob.objects.get()
    assert (job.action, job.group, job.total, job.door) == ("replay", "agents", 6, "console")
    record = AuditRecord.objects.get(job=job)
    assert (record.actor, record.outcome, record.reason) == ("ops", "queued", "prompt v2")
    assert record.target["filter"]["agent"] == ECHO and record.target["filter"]["force"]
    run_job(r, job.pk)  # as the console's job runner does
    assert [f["replayed_from"] for f in copies(r)] == ids[2:]
    jobs_page = text(operator_client.get("/jobs/"))
    assert f'id="job-{job.pk}"' in jobs_page and "replay" in jobs_page
