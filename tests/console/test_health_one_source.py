"""The stream page and the group page show the same health mark at the same moment.

Both pages take their mark from console/live/health.py (the stream's is the worst of its groups'):
a page that judged on its own (the stream saying "agents failing" while the group said
"healthy") fails here, for a healthy group and for unhealthy ones.
"""

from __future__ import annotations

import re

import pytest
import redis
from django.test import Client

from tests.support.console import pending_entries
from tests.support.engine import STREAM
from tests.support.entries import live_consumer
from workers.from_settings import engine_config

pytestmark = pytest.mark.django_db(transaction=True)

GROUP = "agents"
MARK = re.compile(
    r'<div class="card-head"><span class="badge (\w+)">([^<]+)</span>'
    r'\s*(?:<span class="muted">([^<]*)</span>)?\s*</div>'
)


def mark(html: str, live: str) -> tuple[str, str, str]:
    """(level, words, reasons) of the first mark inside the page's live fragment ``live``."""
    found = MARK.search(html, html.index(f'data-live="{live}"'))
    assert found, html
    level, words, reasons = found.groups()
    return level, words, reasons or ""


def both_marks(client: Client) -> tuple[tuple[str, str, str], tuple[str, str, str]]:
    stream_html = client.get(f"/streams/{STREAM}/").content.decode()
    group_html = client.get(f"/streams/{STREAM}/groups/{GROUP}/").content.decode()
    return mark(stream_html, f"stream:{STREAM}"), mark(group_html, f"group:{STREAM}:{GROUP}")


def test_healthy_group_is_healthy_on_both_pages(r: redis.Redis, staff_client: Client) -> None:
    pending_entries(r, count=2)
    live_consumer(r, "w1", group=GROUP)
    on_stream, on_group = both_marks(staff_client)
    assert on_stream == on_group == ("ok", "healthy", "")


def test_group_without_live_consumer_needs_attention_on_both_pages(
    r: redis.Redis, staff_client: Client
) -> None:
    pending_entries(r, count=2)  # read by a worker that has no heartbeat
    on_stream, on_group = both_marks(staff_client)
    assert on_stream == on_group
    assert on_group == ("bad", "needs attention", "no live consumer to take 2 pending entries")


def test_stuck_entry_needs_attention_on_both_pages(r: redis.Redis, staff_client: Client) -> None:
    ids = pending_entries(r, count=1)
    live_consumer(r, "w1", group=GROUP)
    # Idle far past the claim idle time and its grace, with a live worker: stuck.
    stuck_ms = engine_config().claim_idle_ms * 10
    r.xclaim(STREAM, GROUP, "w1", 0, ids, idle=stuck_ms, justid=True)
    on_stream, on_group = both_marks(staff_client)
    assert on_stream == on_group
    assert on_group[:2] == ("bad", "needs attention")
    assert on_group[2].startswith("stuck: the oldest pending entry could be reclaimed")
