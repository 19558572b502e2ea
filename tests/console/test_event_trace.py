"""The event page shows the trace id its envelope carries, linked when a trace URL is set."""

from __future__ import annotations

import json

import pytest
import redis
from django.test import Client

TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736"
TRACEPARENT = f"00-{TRACE_ID}-00f067aa0ba902b7-01"


def entry(r: redis.Redis, **extra: str) -> str:
    event = {"type": "demo.echo", "source": "t", "id": "1", "data": {}, **extra}
    return str(r.xadd("streamdesk:events", {"event": json.dumps(event)}))


def page(client: Client, entry_id: str) -> str:
    response = client.get(f"/streams/streamdesk:events/entries/{entry_id}/")
    assert response.status_code == 200
    return response.content.decode()


def test_event_page_links_the_trace_with_a_trace_url(
    r: redis.Redis, staff_client: Client, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("STREAMDESK_TRACE_URL", "https://jaeger.example/trace/{trace_id}")
    html = page(staff_client, entry(r, traceparent=TRACEPARENT))
    assert f'<a href="https://jaeger.example/trace/{TRACE_ID}"' in html


def test_event_page_shows_the_trace_id_as_text_without_a_trace_url(
    r: redis.Redis, staff_client: Client, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("STREAMDESK_TRACE_URL", raising=False)
    html = page(staff_client, entry(r, traceparent=TRACEPARENT))
    assert f'data-trace-id="{TRACE_ID}">{TRACE_ID}</dd>' in html


def test_event_page_without_traceparent_has_no_trace_row(
    r: redis.Redis, staff_client: Client
) -> None:
    assert "data-trace-id" not in page(staff_client, entry(r))
