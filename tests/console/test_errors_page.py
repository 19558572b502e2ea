"""The console's Errors page: dead letters grouped by fingerprint, a group's letters, and
Retry group / Purge group as tracked bulk jobs (operators only, audited)."""

from __future__ import annotations

import pytest
import redis
from django.test import Client

from tests.support.console import HTMX
from tests.support.error_letters import STREAM, card_declined, letter, order_missing, write_letters
from workers.core.keys import Keys
from workers.models import AuditRecord, BulkJob
from workers.redis.error_groups import read_groups

pytestmark = pytest.mark.django_db(transaction=True)
KEYS = Keys()


def grouped(r: redis.Redis, redis_url: str) -> tuple[str, str]:
    """Four look-alike KeyErrors and two ValueErrors; the two fingerprints."""
    r.sadd(KEYS.streams_index, STREAM)
    letters = [letter(i, order_missing(f"ord-{i}", padding=i)) for i in range(4)]
    letters += [letter(10 + i, card_declined(4000 + i), kind="shop.pay") for i in range(2)]
    write_letters(redis_url, letters)
    by_kind = {g.kind: g.fingerprint for g in read_groups(r, KEYS, [STREAM])}
    return by_kind["KeyError"], by_kind["ValueError"]


def test_errors_page_lists_groups_with_buttons_for_operators(
    r: redis.Redis, redis_url: str, operator_client: Client
) -> None:
    keyerror, declined = grouped(r, redis_url)
    body = operator_client.get("/errors/").content.decode()
    assert "<strong>2</strong> error groups holding <strong>6</strong> dead letters" in body
    assert body.index(f'data-group="{keyerror}"') < body.index(f'data-group="{declined}"')
    assert "KeyError" in body and "agents.handler" in body and "shop.pay" in body
    assert "card 4001 declined" in body  # the sample: the newest letter's last line
    assert f"/errors/{STREAM}/{keyerror}/act/retry/" in body
    assert 'aria-current="page">Errors</a>' in body


def test_errors_page_viewer_sees_no_buttons(
    r: redis.Redis, redis_url: str, viewer_client: Client
) -> None:
    grouped(r, redis_url)
    body = viewer_client.get("/errors/").content.decode()
    assert "KeyError" in body and "/act/" not in body


def test_errors_page_htmx_gets_the_partial(
    r: redis.Redis, redis_url: str, viewer_client: Client
) -> None:
    grouped(r, redis_url)
    body = viewer_client.get("/errors/", headers=HTMX).content.decode()
    assert body.lstrip().startswith('<div id="errors"') and "<html" not in body


def test_errors_page_says_how_to_group_old_letters(r: redis.Redis, viewer_client: Client) -> None:
    from tests.support.entries import dead_letters

    r.sadd(KEYS.streams_index, STREAM)
    dead_letters(r, 3)
    body = viewer_client.get("/errors/").content.decode()
    assert "3 dead letters have no fingerprint yet" in body and "errors --backfill" in body


def test_error_group_page_lists_its_members(
    r: redis.Redis, redis_url: str, viewer_client: Client
) -> None:
    keyerror, _ = grouped(r, redis_url)
    body = viewer_client.get(f"/errors/{STREAM}/{keyerror}/").content.decode()
    assert body.count("data-member=") == 4
    assert "shop.order" in body and "shop.pay" not in body
    assert "/events/" in body  # each letter links to its event


def test_error_group_page_unknown_is_404(r: redis.Redis, viewer_client: Client) -> None:
    assert viewer_client.get(f"/errors/{STREAM}/0123456789abcdef/").status_code == 404
    assert viewer_client.get(f"/errors/{STREAM}/not-a-fingerprint/").status_code == 404


def test_retry_group_queues_a_job(r: redis.Redis, redis_url: str, operator_client: Client) -> None:
    keyerror, _ = grouped(r, redis_url)
    response = operator_client.post(f"/errors/{STREAM}/{keyerror}/act/retry/", headers=HTMX)
    body = response.content.decode()
    job = BulkJob.objects.get()
    assert response.status_code == 200 and f"job #{job.pk}" in body and "4 entries" in body
    assert (job.action, job.total, job.params["fingerprint"]) == ("redrive", 4, keyerror)
    record = AuditRecord.objects.get()
    assert (record.outcome, record.target["fingerprint"]) == ("queued", keyerror)


def test_purge_group_needs_a_reason(
    r: redis.Redis, redis_url: str, operator_client: Client
) -> None:
    _, declined = grouped(r, redis_url)
    response = operator_client.post(f"/errors/{STREAM}/{declined}/act/purge/", headers=HTMX)
    assert response.status_code == 400 and "reason" in response.content.decode()
    assert not BulkJob.objects.exists()


def test_group_actions_refused_to_viewers(
    r: redis.Redis, redis_url: str, viewer_client: Client
) -> None:
    keyerror, _ = grouped(r, redis_url)
    response = viewer_client.post(f"/errors/{STREAM}/{keyerror}/act/retry/", headers=HTMX)
    assert response.status_code == 403 and not BulkJob.objects.exists()


def test_errors_page_draws_fifty_groups_a_page(
    r: redis.Redis, redis_url: str, viewer_client: Client
) -> None:
    from tests.support.error_letters import traceback_text

    r.sadd(KEYS.streams_index, STREAM)
    shapes = [traceback_text(f"def handler():\n    raise KeyError('k{n}x')\n") for n in range(55)]
    # Quoted values are normalised away: 55 functions make 55 groups.
    shapes = [t.replace("handler", f"h{n}") for n, t in enumerate(shapes)]
    write_letters(redis_url, [letter(n, t) for n, t in enumerate(shapes)])
    body = viewer_client.get("/errors/").content.decode()
    assert "<strong>55</strong> error groups" in body and "(groups 1 to 50 here)" in body
    assert body.count("data-group=") == 50 and "?offset=50" in body
    second = viewer_client.get("/errors/?offset=50").content.decode()
    assert second.count("data-group=") == 5 and "?offset=0" in second


def test_errors_page_groups_failing_runs(r: redis.Redis, viewer_client: Client) -> None:
    from workers.models import AgentRun, RunStatus

    def run(n: int, status: str, error: str) -> None:
        AgentRun.objects.create(
            event_hash=f"{n:064x}", event_type="shop.order", stream=STREAM,
            entry_id=f"{n}-0", consumer="w1", status=status, error=error,
        )  # fmt: skip

    for n in range(3):
        run(n, RunStatus.FAILED, order_missing(f"ord-{n}", padding=n))
    run(3, RunStatus.FAILED, card_declined(4242))
    run(4, RunStatus.DEAD, order_missing("ord-4"))  # dead: among the letters, not here
    run(5, RunStatus.SUCCEEDED, "")
    body = viewer_client.get("/errors/").content.decode()
    assert "The newest 4 failed runs" in body
    rows = body.split("data-failing=")[1:]
    assert len(rows) == 2 and "data-count>3<" in rows[0] and "agents.handler" in rows[0]
    assert f"/events/{2:064x}/" in rows[0]  # the newest run of the group is its sample


def test_errors_page_survives_a_key_of_another_type(
    r: redis.Redis, redis_url: str, viewer_client: Client
) -> None:
    keyerror, _ = grouped(r, redis_url)
    r.sadd(KEYS.streams_index, "other")
    r.set(KEYS.error_groups("other"), "a string")
    r.hset(KEYS.error_groups(STREAM), "0123456789abcdef", "not JSON")
    body = viewer_client.get("/errors/").content.decode()
    assert "<strong>2</strong> error groups" in body
    assert viewer_client.get(f"/errors/other/{keyerror}/").status_code == 404
