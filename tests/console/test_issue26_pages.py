"""Issue 26, item 6: requests that answered 500 where a 4xx (or the page) is due.

Each test is a class of input, not one payload: a stored event the parser cannot render
(escaped lone surrogates, nesting deeper than it recurses), entry ids whose clock has no date
(past the year 9999), time windows no stream id falls in (before 1970), keys of another
type behind any action or dead-letter endpoint, and API bodies the parser cannot take.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
import redis
from django.test import Client

from tests.support.console import API_GROUP, DEAD, HTMX, INDEX, api_client, dead_letter, text
from tests.support.engine import STREAM, xadd
from workers.core.keys import dead_stream
from workers.models import AuditRecord

pytestmark = pytest.mark.django_db(transaction=True)

LONE_SURROGATE = '{"type": "demo.echo", "data": {"name": "report-\\udcff.pdf"}}'
DEEP = '{"type": "demo.echo", "data": ' + "[" * 100_000 + "]" * 100_000 + "}"
# 10000-01-01T00:00:00Z, the first millisecond with no datetime; and the largest id part.
YEAR_10000_MS = 253_402_300_800_000
MAX_U64 = 2**64 - 1
BEFORE_1970 = "1969-12-31T23:00:00"


def _answering(client: Client) -> Client:
    # A 500 is then a response to assert on, not an exception out of the test client.
    client.raise_request_exception = False
    return client


@pytest.mark.parametrize("raw", [LONE_SURROGATE, DEEP], ids=["lone-surrogate", "deep"])
def test_event_page_of_an_unrenderable_dead_event_is_shown(
    r: redis.Redis, staff_client: Client, raw: str
) -> None:
    entry_id = xadd(r, raw)
    dead_letter(r, event=raw, entry_id=entry_id)
    client = _answering(staff_client)
    page = client.get(f"/streams/{STREAM}/entries/{entry_id}/")
    assert page.status_code == 200
    assert client.get(DEAD).status_code == 200
    if raw is LONE_SURROGATE:
        assert "report-\\udcff.pdf" in text(page)  # shown as its escape
    else:
        assert "(not JSON)" in text(page)


@pytest.mark.parametrize("ms", [YEAR_10000_MS, MAX_U64])
def test_entry_ids_past_the_year_9999_are_pages_not_500(
    r: redis.Redis, staff_client: Client, ms: int
) -> None:
    entry_id = str(r.xadd(STREAM, {"event": '{"type": "demo.echo"}'}, id=f"{ms}-0"))
    r.sadd(INDEX, STREAM)
    r.xadd(dead_stream(STREAM), {"event": "{}", "deliveries": "1"}, id=f"{ms}-0")
    client = _answering(staff_client)
    assert client.get(f"/streams/{STREAM}/entries/{entry_id}/").status_code == 200
    assert client.get(f"/streams/{STREAM}/entries/{ms}-1/").status_code == 404
    assert client.get(f"/streams/{STREAM}/").status_code == 200
    assert client.get(DEAD).status_code == 200


def _api_dead(client: Client, headers: dict[str, str], action: str, **body: Any) -> Any:
    url = f"/api/streams/{STREAM}/dead/{action}/"
    return client.post(url, body, content_type="application/json", headers=headers)


@pytest.mark.parametrize("field", ["since", "until"])
def test_a_window_before_1970_is_a_400_at_every_door(
    r: redis.Redis, operator: Any, operator_client: Client, field: str
) -> None:
    dead_letter(r, event=json.dumps({"type": "demo.echo", "data": {}}))
    api, headers = api_client(operator)
    api, console = _answering(api), _answering(operator_client)
    preview = api.get(f"/api/streams/{STREAM}/dead/preview/?{field}={BEFORE_1970}", headers=headers)
    assert preview.status_code == 400 and preview.json()["error"].startswith(f"{field}: before")
    for action, extra in (("redrive", {}), ("purge", {"reason": "old"})):
        answer = _api_dead(api, headers, action, all=True, **{field: BEFORE_1970}, **extra)
        assert answer.status_code == 400, answer.content
    page = console.get(f"{DEAD}preview/?{field}={BEFORE_1970}")
    assert page.status_code == 400 and "before 1970" in text(page)
    act = console.post(f"{DEAD}act/redrive/", {"all": "on", field: BEFORE_1970}, headers=HTMX)
    assert act.status_code == 400 and "before 1970" in text(act)
    assert r.xlen(dead_stream(STREAM)) == 1


def test_a_dead_letter_key_of_another_type_is_a_409_everywhere(
    r: redis.Redis, operator: Any, operator_client: Client
) -> None:
    r.sadd(INDEX, STREAM)
    r.set(dead_stream(STREAM), "not a stream")
    api, headers = api_client(operator)
    api, console = _answering(api), _answering(operator_client)
    assert api.get(f"/api/streams/{STREAM}/dead/preview/", headers=headers).status_code == 409
    for action, extra in (("redrive", {}), ("purge", {"reason": "tidy"})):
        for target in ({"all": True}, {"all": True, "dry_run": True}, {"ids": ["1-0"]}):
            answer = _api_dead(api, headers, action, **target, **extra)
            assert answer.status_code == 409, (action, target, answer.content)
            assert "WRONGTYPE" in answer.json()["error"]
    assert console.get(f"{DEAD}preview/").status_code == 409
    act = console.post(f"{DEAD}act/purge/", {"all": "on", "reason": "tidy"}, headers=HTMX)
    assert act.status_code == 409 and "WRONGTYPE" in text(act)
    # A failed action is recorded as one, whichever way it failed.
    outcomes = set(AuditRecord.objects.values_list("outcome", flat=True))
    assert outcomes == {"failed"}


def test_group_actions_on_a_key_of_another_type_are_409(
    r: redis.Redis, operator: Any, operator_client: Client
) -> None:
    r.set(STREAM, "not a stream")
    api, headers = api_client(operator)
    api, console = _answering(api), _answering(operator_client)
    bodies = {
        "claim": {"ids": ["1-0"], "consumer": "c"},
        "claim-all": {"from_consumer": "a", "to_consumer": "b"},
        "retry": {"ids": ["1-0"]},
        "deadletter": {"ids": ["1-0"], "reason": "r"},
        "remove-consumer": {"consumer": "c"},
    }
    for action, body in bodies.items():
        answer = api.post(
            f"{API_GROUP}{action}/", body, content_type="application/json", headers=headers
        )
        assert answer.status_code == 409, (action, answer.content)
        assert "WRONGTYPE" in answer.json()["error"]
    claim = console.post(
        f"/streams/{STREAM}/groups/agents/act/claim/",
        {"ids": ["1-0"], "consumer": "c"},
        headers=HTMX,
    )
    assert claim.status_code == 409 and "WRONGTYPE" in text(claim)


@pytest.mark.parametrize(
    ("body", "says"),
    [
        ("[" * 100_000 + "]" * 100_000, "nests deeper"),
        ('{"ids": ' + "[" * 50 + "]" * 50 + "}", "nests deeper"),
        ('{"reason": "\\ud800"}', "lone surrogate"),
    ],
    ids=["deep", "deep-field", "lone-surrogate"],
)
def test_api_bodies_the_parser_cannot_take_are_400(
    r: redis.Redis, operator: Any, body: str, says: str
) -> None:
    api, headers = api_client(operator)
    api = _answering(api)
    for url in (f"{API_GROUP}pause/", f"/api/streams/{STREAM}/dead/purge/", "/api/events/x/rerun/"):
        answer = api.post(url, body, content_type="application/json", headers=headers)
        assert answer.status_code == 400, (url, answer.content)
        assert says in answer.json()["error"]
    assert not AuditRecord.objects.exists()
