"""Names and records Redis allows, and numbers past what it takes: every page answers them.

Stream and group names may hold ``/``, spaces, ``%``, ``~``, unicode or be ``..``; a dead letter
may have any fields; a query may carry an id past 2^64. Each is a page or a 400, never a 500.
"""

from __future__ import annotations

import asyncio
import html
import json
import re
from typing import Any
from urllib.parse import unquote

import pytest
import redis
from channels.testing import HttpCommunicator
from django.test import Client

from console.asgi import application
from tests.support.console import HOST, INDEX, cookie_header, dead_letter, text
from tests.support.engine import STREAM, xadd
from workers.core.keys import dead_stream

pytestmark = pytest.mark.django_db(transaction=True)

HOSTILE = ["orders/eu", "a b", "ünï/cødé", "100%", "~x~2F", "..", "q?x#y&z", "a/../b"]
PAST_U64 = "18446744073709551616"  # 2^64: Redis refuses it as an id part
GROUP_LINK = re.compile(r'href="(/streams/[^"]*/groups/[^"]*/)"')


def hrefs(body: str, pattern: str) -> list[str]:
    return [html.unescape(h) for h in re.findall(pattern, body)]


def make_stream(r: redis.Redis, name: str, group: str = "team/a") -> str:
    entry_id = xadd(r, {"type": "demo.echo", "data": {"n": 1}}, stream=name)
    r.xgroup_create(name, group, id="0")
    r.xreadgroup(group, "c/1", {name: ">"}, count=1)
    r.sadd(INDEX, name)
    return entry_id


@pytest.mark.parametrize("name", HOSTILE)
def test_overview_links_of_a_hostile_name_resolve(
    r: redis.Redis, staff_client: Client, name: str
) -> None:
    make_stream(r, name)
    overview = staff_client.get("/")
    assert overview.status_code == 200
    [stream_url] = {
        h
        for h in hrefs(text(overview), r'href="(/streams/[^"]*/)"')
        if "/groups/" not in h and not h.endswith("/dead/")
    }
    page = staff_client.get(stream_url)
    assert page.status_code == 200
    assert html.escape(name) in text(page)


@pytest.mark.parametrize("name", HOSTILE)
def test_group_and_dead_pages_of_a_hostile_name(
    r: redis.Redis, staff_client: Client, name: str
) -> None:
    make_stream(r, name, group=name)
    body = text(staff_client.get("/"))
    [group_url] = hrefs(body, GROUP_LINK.pattern)
    group = staff_client.get(group_url)
    assert group.status_code == 200
    assert "c/1" in text(group)
    [dead_url] = set(hrefs(body, r'href="(/streams/[^"]*/dead/)"'))
    assert staff_client.get(dead_url).status_code == 200


@pytest.mark.parametrize("name", HOSTILE)
def test_event_page_of_a_hostile_stream_name(
    r: redis.Redis, staff_client: Client, name: str
) -> None:
    entry_id = make_stream(r, name)
    [stream_url] = {
        h
        for h in hrefs(text(staff_client.get("/")), r'href="(/streams/[^"]*/)"')
        if "/groups/" not in h and not h.endswith("/dead/")
    }
    [event_url] = hrefs(text(staff_client.get(stream_url)), r'href="([^"]*/entries/[^"]*/)"')
    page = staff_client.get(event_url)
    assert page.status_code == 200
    assert entry_id in text(page) and html.escape(name) in text(page)


@pytest.mark.parametrize(
    ("fields", "shown"),
    [
        ({"event": json.dumps({"type": "x", "data": {}}), "deliveries": "many"}, "malformed"),
        ({"reason": "no event field at all"}, "malformed"),
        ({"event": json.dumps({"data": {"no": "type"}})}, "(no type)"),
        ({"event": "[" * 100_000}, "(not JSON)"),
    ],
    ids=["deliveries-not-a-number", "no-event", "no-type", "deeply-nested"],
)
def test_dead_letters_page_shows_an_odd_letter_for_what_it_is(
    r: redis.Redis, staff_client: Client, fields: dict[str, str], shown: str
) -> None:
    dead_letter(r, event=json.dumps({"type": "demo.echo", "data": {"n": 1}}))
    bad = dead_letter(r, **fields)
    response = staff_client.get(f"/streams/{STREAM}/dead/")
    assert response.status_code == 200
    body = text(response)
    assert html.escape(shown) in body and (shown != "malformed" or bad in body)
    assert "demo.echo" in body  # the good letter still shows


def test_dead_preview_counts_past_a_malformed_letter(
    r: redis.Redis, operator_client: Client
) -> None:
    dead_letter(r, event="[" * 100_000)
    dead_letter(r, event=json.dumps({"data": {"no": "type"}}), deliveries="many")
    dead_letter(r, event=json.dumps({"type": "demo.echo", "data": {}}))
    response = operator_client.get(f"/streams/{STREAM}/dead/preview/", {"type": "demo.echo"})
    assert response.status_code == 200
    assert "1 dead letter matches" in text(response)


@pytest.mark.parametrize(
    "url",
    [
        f"/streams/{STREAM}/?before={PAST_U64}-0",
        f"/streams/{STREAM}/?before=1-{PAST_U64}",
        f"/streams/{STREAM}/groups/agents/?after={PAST_U64}-0",
        f"/streams/{STREAM}/groups/agents/?min_idle_s={10**30}",
        f"/streams/{STREAM}/groups/agents/?min_idle_s=9223372036854776",
        f"/streams/{STREAM}/groups/agents/?min_deliveries={10**30}",
        f"/streams/{STREAM}/dead/?before={PAST_U64}-0",
        f"/streams/{STREAM}/entries/{PAST_U64}-0/",
        f"/streams/{STREAM}/entries/not-an-id/",
        f"/streams/{STREAM}/dead/preview/?since=99999-01-01",
    ],
)
def test_a_number_past_what_redis_takes_is_400(
    r: redis.Redis, operator_client: Client, url: str
) -> None:
    make_stream(r, STREAM, group="agents")
    response = operator_client.get(url)
    assert response.status_code == 400
    assert "Traceback" not in text(response)


def test_group_page_after_the_largest_id_is_an_empty_page(
    r: redis.Redis, staff_client: Client
) -> None:
    make_stream(r, STREAM, group="agents")
    largest = f"{2**64 - 1}-{2**64 - 1}"
    response = staff_client.get(f"/streams/{STREAM}/groups/agents/?after={largest}")
    assert response.status_code == 200


def _wrongtype(r: redis.Redis, name: str) -> None:
    r.set(name, "a string, not a stream")
    r.sadd(INDEX, name)


def test_a_key_that_is_not_a_stream_shows_its_error(r: redis.Redis, staff_client: Client) -> None:
    make_stream(r, STREAM, group="agents")
    _wrongtype(r, "streamdesk:notastream")
    overview = text(staff_client.get("/"))
    assert "WRONGTYPE" in overview and STREAM in overview
    page = staff_client.get("/streams/streamdesk:notastream/")
    assert page.status_code == 200 and "WRONGTYPE" in text(page)


def test_dead_letters_of_a_key_that_is_not_a_stream(r: redis.Redis, staff_client: Client) -> None:
    _wrongtype(r, dead_stream(STREAM))
    response = staff_client.get(f"/streams/{STREAM}/dead/")
    assert response.status_code == 409 and "WRONGTYPE" in text(response)


def test_event_page_on_a_key_that_is_not_a_stream(r: redis.Redis, staff_client: Client) -> None:
    _wrongtype(r, "streamdesk:notastream")
    response = staff_client.get("/streams/streamdesk:notastream/entries/1-0/")
    assert response.status_code == 409 and "WRONGTYPE" in text(response)


def test_a_stream_with_garbage_counters_does_not_hide_the_others(
    r: redis.Redis, staff_client: Client
) -> None:
    make_stream(r, STREAM, group="agents")
    make_stream(r, "streamdesk:broken", group="agents")
    r.hset("streamdesk:stats:streamdesk:broken", "processed", "lots")
    response = staff_client.get("/")
    assert response.status_code == 200
    body = text(response)
    assert f'href="/streams/{STREAM}/groups/agents/"' in body
    assert "streamdesk:broken" in body and "cannot be read" in body


def asgi_get(client: Client, href: str) -> dict[str, Any]:
    """GET through the ASGI app with the path as daphne hands it over: percent-decoded."""
    path, _, query = unquote(href).partition("?")
    headers = [HOST, cookie_header(client)]
    communicator = HttpCommunicator(application, "GET", path, headers=headers)
    communicator.scope["query_string"] = query.encode()
    return asyncio.run(communicator.get_response(timeout=10))


@pytest.mark.parametrize("name", ["orders/eu", "100%", "ünï/cødé"])
def test_links_of_a_hostile_name_resolve_through_the_asgi_app(
    r: redis.Redis, staff_client: Client, name: str
) -> None:
    make_stream(r, name)
    overview = asgi_get(staff_client, "/")
    assert overview["status"] == 200
    body = overview["body"].decode()
    [group_url] = hrefs(body, GROUP_LINK.pattern)
    group = asgi_get(staff_client, group_url)
    assert group["status"] == 200 and html.escape(name) in group["body"].decode()
