"""The console's and the API's claim targets, pruned consumers, missing groups and audit
outcomes (issue 14 items 6 and 9)."""

from __future__ import annotations

import re
from typing import Any

import pytest
import redis
from django.test import Client

from tests.support.console import api_client
from tests.support.engine import STREAM
from tests.support.entries import GROUP, live_consumer, pending_entries
from workers.core.keys import Keys
from workers.models import AuditRecord
from workers.redis.consumers import pruned_field

pytestmark = pytest.mark.django_db(transaction=True)

PAGE = f"/streams/{STREAM}/groups/{GROUP}/"
ACT = f"{PAGE}act/"
API = f"/api/streams/{STREAM}/groups/{GROUP}/"
HTMX = {"HX-Request": "true"}
KEYS = Keys()


def entries(r: redis.Redis, n: int = 2) -> list[str]:
    ids = pending_entries(r, n, consumer="gone-worker")
    r.sadd(KEYS.streams_index, STREAM)
    return ids


def consumers(r: redis.Redis) -> set[str]:
    return {str(c["name"]) for c in r.xinfo_consumers(STREAM, GROUP)}


def claim_choices(body: str) -> list[str]:
    """The options of the pending page's claim control."""
    select = re.search(r'<select name="consumer">(.*?)</select>', body, re.S)
    assert select is not None, "no claim <select> on the page"
    return re.findall(r"<option[^>]*>([^<]*)</option>", select.group(1))


def test_claim_control_offers_only_live_consumers(r: redis.Redis, operator_client: Client) -> None:
    entries(r)
    r.xgroup_createconsumer(STREAM, GROUP, "ghost")
    live_consumer(r, "w-live")
    body = operator_client.get(PAGE).content.decode()
    assert claim_choices(body) == ["choose a live consumer", "w-live"]
    assert 'list="consumers"' not in body  # no free-text name any more


def test_claim_control_says_when_no_consumer_is_live(
    r: redis.Redis, operator_client: Client
) -> None:
    entries(r)
    assert claim_choices(operator_client.get(PAGE).content.decode()) == ["no live consumer"]


def test_console_claim_to_a_consumer_that_is_not_live_is_a_400(
    r: redis.Redis, operator_client: Client
) -> None:
    ids = entries(r)
    response = operator_client.post(
        f"{ACT}claim/", {"ids": ids, "consumer": "typed-name"}, headers=HTMX
    )
    assert response.status_code == 400
    assert "&#x27;typed-name&#x27; is not a live consumer of group" in response.content.decode()
    assert consumers(r) == {"gone-worker"}
    assert AuditRecord.objects.get().outcome == "refused"


def test_console_claim_all_to_a_dead_consumer_is_a_400(
    r: redis.Redis, operator_client: Client
) -> None:
    entries(r)
    r.xgroup_createconsumer(STREAM, GROUP, "ghost")
    response = operator_client.post(
        f"{ACT}claim-all/", {"from_consumer": "gone-worker", "to_consumer": "ghost"}, headers=HTMX
    )
    assert response.status_code == 400
    assert "has no runworker heartbeat" in response.content.decode()
    assert r.xpending(STREAM, GROUP)["consumers"] == [{"name": "gone-worker", "pending": 2}]


def test_api_claim_to_a_consumer_that_is_not_live_is_a_400(r: redis.Redis, operator: Any) -> None:
    ids = entries(r)
    client, auth = api_client(operator)
    response = client.post(
        f"{API}claim/",
        {"ids": ids, "consumer": "typed-name"},
        content_type="application/json",
        headers=auth,
    )
    assert response.status_code == 400
    assert response.json()["error"].startswith("consumer: 'typed-name' is not a live consumer")
    assert consumers(r) == {"gone-worker"}


def test_group_page_says_how_many_consumers_were_pruned(
    r: redis.Redis, operator_client: Client
) -> None:
    entries(r)
    r.hset(KEYS.stats(STREAM), pruned_field(GROUP), 3)  # as housekeeping's script counts
    body = operator_client.get(PAGE).content.decode()
    assert "3 removed by housekeeping so far" in body


def test_a_missing_group_is_said_in_words_by_console_and_api(
    r: redis.Redis, operator: Any, operator_client: Client
) -> None:
    entries(r)
    said = f"no group &#x27;nope&#x27; on stream &#x27;{STREAM}&#x27;"
    url = f"/streams/{STREAM}/groups/nope/act/retry/"
    response = operator_client.post(url, {"ids": ["1-0"]}, headers=HTMX)
    assert response.status_code == 409 and said in response.content.decode()
    client, auth = api_client(operator)
    response = client.post(
        f"/api/streams/{STREAM}/groups/nope/deadletter/",
        {"ids": ["1-0"], "reason": "x"},
        content_type="application/json",
        headers=auth,
    )
    assert response.status_code == 409
    assert response.json()["error"] == f"no group 'nope' on stream '{STREAM}'"
    assert list(AuditRecord.objects.values_list("outcome", flat=True)) == ["refused"] * 2


def test_audit_page_shows_noop_and_refused_apart_from_ok(
    r: redis.Redis, operator_client: Client, staff_client: Client
) -> None:
    ids = entries(r, 1)
    live_consumer(r, "w-live")
    operator_client.post(f"{ACT}retry/", {"ids": ids}, headers=HTMX)  # ok
    operator_client.post(f"{ACT}retry/", {"ids": ["9-9"]}, headers=HTMX)  # noop
    operator_client.post(f"{ACT}claim/", {"ids": ids, "consumer": "x"}, headers=HTMX)  # refused
    body = staff_client.get("/audit/").content.decode()
    badges = re.findall(r'<span class="badge (\w+)" data-outcome="([\w-]+)">', body)
    assert badges == [("warn", "refused"), ("muted", "noop"), ("ok", "ok")]
    noop = staff_client.get("/audit/?outcome=noop").content.decode()
    assert noop.count('data-outcome="noop"') == 1 and 'data-outcome="ok"' not in noop


def test_a_consumer_that_never_read_says_so(r: redis.Redis, operator_client: Client) -> None:
    """Redis >= 7.2 reports inactive -1 for a consumer that never read: not "-1 ms"."""
    entries(r)
    r.xgroup_createconsumer(STREAM, GROUP, "ghost")
    inactive = {c["name"]: c.get("inactive") for c in r.xinfo_consumers(STREAM, GROUP)}["ghost"]
    body = operator_client.get(PAGE).content.decode()
    assert ("never read" in body) == (inactive == -1)
    assert "-1 ms" not in body
