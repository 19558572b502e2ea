"""The Runs page (console/views/runs.py) against the real database: each filter, keyset pages
both ways with no run twice and none missing, bad filters answered with a message, the empty
state, and ``/api/runs/`` beside it."""

from __future__ import annotations

import re
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from django.test import Client

from console.reads import runs
from console.reads.runs import Cursor, RunFilter
from workers.models import AgentRun, RunStatus

T0 = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)
ROW = re.compile(r'data-run="([0-9a-f]+)"')


def add_run(n: int, at: datetime, **fields: Any) -> AgentRun:
    values: dict[str, Any] = {
        "event_hash": f"{n:064x}",
        "event_type": "demo.echo",
        "stream": "streamdesk:events",
        "entry_id": f"{n}-0",
        "consumer": "w1",
        "status": RunStatus.SUCCEEDED,
        **fields,
    }
    run = AgentRun.objects.create(**values)
    AgentRun.objects.filter(pk=run.pk).update(created_at=at)  # auto_now_add wrote "now"
    run.created_at = at
    return run


def hashes(response: Any) -> list[str]:
    return ROW.findall(response.content.decode())


def newest_first(runs_: list[AgentRun]) -> list[str]:
    return [r.event_hash for r in sorted(runs_, key=lambda r: (r.created_at, r.id), reverse=True)]


@pytest.fixture
def many(db: Any) -> list[AgentRun]:
    """Sixty runs, pairs of them created in the same microsecond (the id breaks the tie)."""
    return [add_run(n, T0 + timedelta(seconds=n // 2)) for n in range(60)]


def test_runs_page_lists_newest_first_with_the_run_columns(viewer_client: Client, db: Any) -> None:
    add_run(1, T0, subject="order/1", version="v7", attempts=3, duration_ms=1250.0)
    add_run(
        2,
        T0 + timedelta(minutes=1),
        event_type="mail.sent",
        status=RunStatus.DEAD,
        error="Traceback (most recent call last):\n  File x\nValueError: card declined",
        prompt_tokens=1200,
        completion_tokens=34,
        cost_usd=0.0123,
    )
    page = viewer_client.get("/runs/")
    assert page.status_code == 200
    assert hashes(page) == [f"{2:064x}", f"{1:064x}"]
    text = page.content.decode()
    assert "order/1" in text and "v7" in text and "1.2 s" in text
    assert "ValueError: card declined" in text and "Traceback" not in text
    assert "1,234" in text and "$0.0123" in text
    assert f'href="/events/{1:064x}/"' in text


def test_runs_page_is_in_the_nav(viewer_client: Client, db: Any) -> None:
    text = viewer_client.get("/runs/").content.decode()
    assert '<a href="/runs/" aria-current="page">Runs</a>' in text


def test_admin_is_linked_for_staff_only(
    staff_client: Client, viewer_client: Client, db: Any
) -> None:
    assert 'href="/admin/" data-admin-link' in staff_client.get("/runs/").content.decode()
    assert "data-admin-link" not in viewer_client.get("/runs/").content.decode()


@pytest.mark.parametrize(
    ("query", "matching"),
    [
        ("type=mail.sent", {2, 3}),
        ("status=failed", {3}),
        ("subject=order%2F7", {1}),
        ("created_from=2026-12-01T12:02", {2, 3}),
        ("created_to=2026-12-01T12:02", {1}),
        ("created_from=2026-12-01T12:01:30&created_to=2026-12-01T12:03", {2}),
        ("created_from=2026-12-01T12:01", {1, 2, 3}),
        ("error=TIMEOUT", {3}),
        ("type=mail.sent&status=succeeded", {2}),
        ("type=mail.sent&error=timeout", {3}),
    ],
)
def test_runs_page_filters(viewer_client: Client, db: Any, query: str, matching: set[int]) -> None:
    add_run(1, T0 + timedelta(minutes=1), subject="order/7")
    add_run(2, T0 + timedelta(minutes=2), event_type="mail.sent", subject="order/8")
    add_run(
        3,
        T0 + timedelta(minutes=3),
        event_type="mail.sent",
        status=RunStatus.FAILED,
        error="Traceback...\nTimeoutError: upstream timeout",
    )
    page = viewer_client.get(f"/runs/?{query}")
    assert page.status_code == 200
    assert set(hashes(page)) == {f"{n:064x}" for n in matching}


def _walk(client: Client, first: str, link: str) -> list[list[str]]:
    pages, url = [], first
    while url:
        response = client.get(url)
        assert response.status_code == 200
        pages.append(hashes(response))
        found = re.search(rf'href="(\?[^"]*{link}=[0-9.]+)"', response.content.decode())
        url = f"/runs/{found[1].replace('&amp;', '&')}" if found else ""
        assert len(pages) < 10, "the pager does not end"
    return pages


def test_runs_pages_older_then_newer_show_every_run_once(
    viewer_client: Client, many: list[AgentRun]
) -> None:
    down = _walk(viewer_client, "/runs/", "older")
    assert [len(p) for p in down] == [25, 25, 10]
    assert [h for p in down for h in p] == newest_first(many)
    last_url = f"/runs/?older={Cursor.of(_run(down[1][-1])).encode()}"
    up = _walk(viewer_client, last_url, "newer")
    assert up[0] == down[2]
    assert up[1:] == [down[1], down[0]]


def _run(event_hash: str) -> AgentRun:
    return AgentRun.objects.get(event_hash=event_hash)


def test_runs_pages_keep_the_filters(viewer_client: Client, many: list[AgentRun]) -> None:
    failed = [r for r in many if r.id % 2]
    AgentRun.objects.filter(id__in=[r.id for r in failed]).update(status=RunStatus.FAILED)
    down = _walk(viewer_client, "/runs/?status=failed", "older")
    assert [h for p in down for h in p] == newest_first(failed)


def test_error_search_is_bounded_and_searches_on(
    viewer_client: Client, many: list[AgentRun], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(runs, "ERROR_SCAN_ROWS", 20)
    oldest = sorted(many, key=lambda r: (r.created_at, r.id))[:3]
    AgentRun.objects.filter(id__in=[r.id for r in oldest]).update(error="KeyError: 'sku'")
    first = viewer_client.get("/runs/?error=keyerror")
    assert hashes(first) == []
    text = first.content.decode()
    assert "each page searches 20 runs" in text and "Older" in text
    pages = _walk(viewer_client, "/runs/?error=keyerror", "older")
    assert [h for p in pages for h in p] == newest_first(oldest)


def test_runs_page_says_when_there_are_no_runs(viewer_client: Client, db: Any) -> None:
    text = viewer_client.get("/runs/").content.decode()
    assert "No runs yet" in text and "<table data-runs>" not in text


def test_runs_page_says_when_nothing_matches(viewer_client: Client, many: list[AgentRun]) -> None:
    text = viewer_client.get("/runs/?status=dead").content.decode()
    assert "No run matches these filters" in text


@pytest.mark.parametrize(
    ("query", "message"),
    [
        ("status=exploded", "Select a valid choice"),
        ("created_from=yesterday", "Enter a date and time"),
        ("created_from=2026-12-02T00:00&created_to=2026-12-01T00:00", "must be earlier"),
        ("older=12", "is not a page cursor"),
        ("older=1.1&newer=2.2", "not both"),
        ("subject=" + "x" * 300, "at most 256 characters"),
        ("older=999999999999999999.1", "names no date"),
    ],
)
def test_runs_page_explains_a_bad_filter(
    viewer_client: Client, db: Any, query: str, message: str
) -> None:
    page = viewer_client.get(f"/runs/?{query}")
    assert page.status_code == 400
    assert message in page.content.decode()
    assert "data-form-errors" in page.content.decode()


def test_runs_page_answers_htmx_with_the_partial(
    viewer_client: Client, many: list[AgentRun]
) -> None:
    page = viewer_client.get("/runs/?type=demo.echo", HTTP_HX_REQUEST="true")
    assert page.content.decode().lstrip().startswith('<div id="runs">')
    assert len(hashes(page)) == runs.PAGE_SIZE


def test_runs_page_needs_a_viewer(plain_client: Client, client: Client, db: Any) -> None:
    assert plain_client.get("/runs/").status_code == 403
    assert client.get("/runs/").status_code == 302


def test_run_filter_narrows_only_when_set() -> None:
    assert not RunFilter().narrows() and not RunFilter(error="x").narrows()
    assert RunFilter(subject="order/1").narrows()


def test_api_runs_pages_with_the_same_filters_and_cursors(
    viewer_client: Client, many: list[AgentRun]
) -> None:
    first = viewer_client.get("/api/runs/?type=demo.echo").json()
    assert [r["event_hash"] for r in first["runs"]] == newest_first(many)[:25]
    assert first["newer"] is None and first["error_scanned"] == 0
    assert first["runs"][0]["url"] == f"/events/{first['runs'][0]['event_hash']}/"
    second = viewer_client.get(f"/api/runs/?type=demo.echo&older={first['older']}").json()
    assert [r["event_hash"] for r in second["runs"]] == newest_first(many)[25:50]
    back = viewer_client.get(f"/api/runs/?type=demo.echo&newer={second['newer']}").json()
    assert back["runs"] == first["runs"]


def test_api_runs_refuses_a_bad_filter(viewer_client: Client, db: Any) -> None:
    response = viewer_client.get("/api/runs/?status=exploded")
    assert response.status_code == 400
    assert response.json()["error"].startswith("status: Select a valid choice")
    unknown = viewer_client.get("/api/runs/?offset=50")
    assert unknown.status_code == 400 and unknown.json()["error"] == "offset: not accepted here"


def test_api_runs_needs_a_viewer(plain_client: Client, client: Client, db: Any) -> None:
    assert plain_client.get("/api/runs/").status_code == 403
    assert client.get("/api/runs/").status_code == 401


def test_error_search_pages_both_ways_without_repeats(
    viewer_client: Client, many: list[AgentRun], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(runs, "ERROR_SCAN_ROWS", 20)
    failed = [r for r in many if r.id % 3 == 0]
    AgentRun.objects.filter(id__in=[r.id for r in failed]).update(error="KeyError: 'sku'")
    down = _walk(viewer_client, "/runs/?error=KeyError", "older")
    assert [h for p in down for h in p] == newest_first(failed)
    oldest = _run(newest_first(many)[-1])
    start = f"/runs/?error=KeyError&older={replace(Cursor.of(oldest), id=oldest.id + 1).encode()}"
    up = [h for p in _walk(viewer_client, start, "newer") for h in p]
    assert len(up) == len(set(up)) and set(up) == set(newest_first(failed))


def test_runs_pages_newer_from_any_run_show_each_once(
    viewer_client: Client, many: list[AgentRun]
) -> None:
    order = newest_first(many)
    start = f"/runs/?older={Cursor.of(_run(order[9])).encode()}"  # a page from the 11th run
    up = _walk(viewer_client, start, "newer")
    assert up[0] == order[10:35]
    assert [h for p in up[1:] for h in p] == order[:10]  # the top page is short, not topped up
