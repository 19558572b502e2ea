"""A dead letter's own Retry button (its row, and the event page of a dead event), the bulk
retry's "queued as job #N (n entries)", the Jobs table's counts, and the plain-words 400s
that the console shows next to the control that caused them (static/console/errors.js)."""

from __future__ import annotations

import re

import pytest
import redis
from django.test import Client

from tests.support.console import ACT, DEAD, HTMX, dead_letters, pending_entries
from tests.support.engine import STREAM
from workers.core.events import decode_envelope, event_hash
from workers.core.keys import dead_stream
from workers.models import AgentRun, AuditRecord, BulkJob, JobStatus

pytestmark = pytest.mark.django_db(transaction=True)


def retry(client: Client, dead_id: str) -> tuple[int, str]:
    response = client.post(f"{DEAD}{dead_id}/retry/", {}, headers=HTMX)
    return response.status_code, response.content.decode()


def dead_letter_of(r: redis.Redis, raw_event: str, entry_id: str = "1-0") -> str:
    """A dead letter holding ``raw_event``, as a worker writes one."""
    fields = {"event": raw_event, "stream": STREAM, "group": "agents", "entry_id": entry_id}
    fields |= {"deliveries": "5", "reason": "max-deliveries", "error": "boom", "by": "w"}
    return str(r.xadd(dead_stream(STREAM), fields))


def test_row_retry_redrives_that_letter_only(r: redis.Redis, operator_client: Client) -> None:
    dead = dead_letters(r, 3)
    status, body = retry(operator_client, dead[1])
    assert status == 200, body
    [(new_id, fields)] = r.xrange(STREAM)
    assert fields["retry_of"] == dead[1] and fields["by"] == "ops"
    assert f'Retried as <a class="mono" href="/streams/{STREAM}/entries/{new_id}/">' in body
    assert [i for i, _ in r.xrange(dead_stream(STREAM))] == [dead[0], dead[2]]
    record = AuditRecord.objects.get()
    assert (record.action, record.count, record.actor) == ("redrive", 1, "ops")


def test_row_retry_skips_an_event_that_already_succeeded(
    r: redis.Redis, operator_client: Client, traffic: list[str]
) -> None:
    [(_, fields)] = r.xrange(STREAM, traffic[0], traffic[0])
    run = AgentRun.objects.get(entry_id=traffic[0])
    assert run.status == "succeeded"
    letter = dead_letter_of(r, fields["event"])  # a duplicate of it, dead-lettered
    length = r.xlen(STREAM)

    status, body = retry(operator_client, letter)
    assert status == 200, body
    assert "Skipped: already done" in body
    assert r.xlen(STREAM) == length  # nothing sent: the agent cannot run it again
    assert letter in [i for i, _ in r.xrange(dead_stream(STREAM))]
    assert AgentRun.objects.get(pk=run.pk).attempts == run.attempts
    assert AuditRecord.objects.get().skipped == 1


def test_row_retry_asks_the_database_when_the_gate_record_is_lost(
    r: redis.Redis, operator_client: Client, traffic: list[str]
) -> None:
    [(_, fields)] = r.xrange(STREAM, traffic[1], traffic[1])
    r.delete(*r.keys("streamdesk:idem:*"))  # a restart without AOF: the database still knows
    letter = dead_letter_of(r, fields["event"])
    length = r.xlen(STREAM)
    assert "Skipped: already done" in retry(operator_client, letter)[1]
    assert r.xlen(STREAM) == length


def test_row_retry_of_a_letter_already_gone_says_so(
    r: redis.Redis, operator_client: Client
) -> None:
    dead = dead_letters(r, 1)
    assert retry(operator_client, dead[0])[0] == 200
    status, body = retry(operator_client, dead[0])  # a second tab, or a double click
    assert status == 200 and "Skipped: 1 already gone (redriven or purged)" in body
    assert r.xlen(STREAM) == 1


def test_row_retry_refuses_a_bad_id_and_a_viewer(
    r: redis.Redis, operator_client: Client, viewer_client: Client
) -> None:
    dead = dead_letters(r, 1)
    status, body = retry(operator_client, "not-an-id")
    assert status == 400 and 'role="alert"' in body and "is not a dead letter id" in body
    assert retry(viewer_client, dead[0])[0] == 403
    assert r.xlen(dead_stream(STREAM)) == 1 and not r.exists(STREAM)


def test_dead_letters_page_has_a_retry_button_per_row(
    r: redis.Redis, operator_client: Client, viewer_client: Client
) -> None:
    dead = dead_letters(r, 3)
    body = operator_client.get(DEAD).content.decode()
    for dead_id in dead:
        assert f'hx-post="{DEAD}{dead_id}/retry/"' in body
        assert f'aria-label="Retry {dead_id}"' in body
    assert "/retry/" not in viewer_client.get(DEAD).content.decode()


def test_event_page_of_a_dead_event_has_retry_next_to_force_rerun(
    r: redis.Redis, operator_client: Client, viewer_client: Client, traffic: list[str]
) -> None:
    [(letter, fields)] = r.xrange(dead_stream(STREAM))
    page = f"/events/{event_hash(decode_envelope(fields['event']))}/"
    body = operator_client.get(page).content.decode()
    actions = body.split('<div class="actions">', 1)[1].split("</div>", 1)[0]
    assert "Force re-run" in actions and f'hx-post="{DEAD}{letter}/retry/"' in actions
    assert "/retry/" not in viewer_client.get(page).content.decode()

    status, answer = retry(operator_client, letter)
    assert status == 200 and "Retried as" in answer
    assert "/retry/" not in operator_client.get(page).content.decode()  # the letter is gone


def test_event_page_of_a_succeeded_event_has_no_retry(
    r: redis.Redis, operator_client: Client, traffic: list[str]
) -> None:
    body = operator_client.get(f"/streams/{STREAM}/entries/{traffic[0]}/").content.decode()
    assert "Force re-run" in body and "/retry/" not in body


def test_bulk_retry_says_queued_as_job_with_its_count(
    r: redis.Redis, operator_client: Client
) -> None:
    dead_letters(r, 3)
    response = operator_client.post(
        f"{DEAD}act/redrive/", {"all": "on", "reason_is": "max-deliveries"}, headers=HTMX
    )
    assert response.status_code == 200, response.content
    job = BulkJob.objects.get()
    assert job.total == 3
    text = re.sub(r"<[^>]+>|\s+", " ", response.content.decode())
    assert re.search(rf"queued as job #{job.pk} \(3 entries\)", re.sub(r" +", " ", text)), text


def test_jobs_table_shows_done_skipped_failed_and_total(
    r: redis.Redis, operator_client: Client
) -> None:
    job = BulkJob.objects.create(
        action="redrive",
        stream=STREAM,
        status=JobStatus.FAILED,
        total=10,
        done=6,
        skipped=1,
        created_by="ops",
        door="console",
        error="RedisUnavailable: gone",
    )
    row = operator_client.get("/jobs/").content.decode().split(f'id="job-{job.pk}"', 1)[1]
    counts = dict(re.findall(r'data-count="(\w+)">([^<]*)<', row.split("</tr>", 1)[0]))
    assert counts == {"done": "6", "skipped": "1", "failed": "3", "total": "10"}


@pytest.mark.parametrize(
    ("action", "form", "message"),
    [
        ("claim", {"consumer": "alive"}, "select at least one entry (tick its box)"),
        ("claim", {"ids": "FIRST"}, "choose the consumer to claim the entries to"),
        ("deadletter", {"ids": "FIRST"}, "a reason is required, it goes in the audit log"),
    ],
)
def test_refused_group_action_says_what_is_missing(
    r: redis.Redis, operator_client: Client, action: str, form: dict[str, str], message: str
) -> None:
    first = pending_entries(r)[0]
    data = {k: first if v == "FIRST" else v for k, v in form.items()}
    response = operator_client.post(f"{ACT}{action}/", data, headers=HTMX)
    assert response.status_code == 400
    assert f'<p class="outcome bad" role="alert">{message}</p>' in response.content.decode()


def test_purge_all_matching_without_a_reason_says_so(
    r: redis.Redis, operator_client: Client
) -> None:
    dead_letters(r, 2)
    response = operator_client.post(f"{DEAD}act/purge/", {"all": "on"}, headers=HTMX)
    assert response.status_code == 400
    assert "a reason is required, it goes in the audit log" in response.content.decode()
    assert r.xlen(dead_stream(STREAM)) == 2


def test_every_page_loads_the_errors_script(operator_client: Client) -> None:
    body = operator_client.get("/jobs/").content.decode()
    assert '<script src="/static/console/errors.js"></script>' in body
    assert 'data-login-url="/login/"' in body
