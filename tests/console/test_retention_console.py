"""The overview and the stream page show how far back each stream reaches: its oldest
entry's age and time, the retention the trimming workers use and their last trim."""

from __future__ import annotations

import time

import pytest
import redis
from django.test import Client

from tests.support.engine import STREAM
from workers.core.keys import Keys
from workers.retention import Retention, trim

pytestmark = pytest.mark.django_db(transaction=True)

DAY_MS = 86_400_000


def text(response: object) -> str:
    return response.content.decode()  # type: ignore[attr-defined]


def old_stream(r: redis.Redis, days: int = 10) -> str:
    """300 entries ``days`` old and one new, all read and acked; the first entry's id."""
    start = int(time.time() * 1000) - days * DAY_MS
    ids = [str(r.xadd(STREAM, {"event": "{}"}, id=f"{start + i}-0")) for i in range(300)]
    ids.append(str(r.xadd(STREAM, {"event": "{}"})))
    r.xgroup_create(STREAM, "agents", id="0")
    r.xreadgroup("agents", "c", {STREAM: ">"})
    r.xack(STREAM, "agents", *ids)
    r.sadd(Keys().streams_index, STREAM)
    return ids[0]


def test_overview_shows_the_oldest_entry_before_any_trim(
    r: redis.Redis, staff_client: Client
) -> None:
    first = old_stream(r)
    body = text(staff_client.get("/"))
    day = time.strftime("%Y-%m-%d", time.gmtime(int(first.split("-")[0]) / 1000))
    assert 'data-metric="oldest-entry">10 d 0 h<span class="unit">ago</span>' in body
    assert f"{day} " in body
    assert 'data-metric="retention">not trimmed yet<' in body


def test_overview_and_stream_page_show_the_retention_and_last_trim(
    r: redis.Redis, staff_client: Client
) -> None:
    old_stream(r)
    trim(r, Keys(), STREAM, Retention(3600), by="worker-7")
    for page in ("/", f"/streams/{STREAM}/"):
        body = text(staff_client.get(page))
        assert 'data-metric="retention">keeps 1 h<' in body
        assert "Last trim" in body and '<span class="mono">worker-7</span>' in body
        # What is left reaches back less far than before, to the node the cut fell in.
        assert 'data-metric="oldest-entry">10 d' not in body


def test_overview_says_which_group_holds_the_trim_back(
    r: redis.Redis, staff_client: Client
) -> None:
    old_stream(r)
    r.xgroup_create(STREAM, "slow", id="0")  # has read nothing
    trim(r, Keys(), STREAM, Retention(3600), by="worker-7")
    body = text(staff_client.get("/"))
    assert "held back by group <strong>slow</strong>" in body
    assert 'data-metric="oldest-entry">10 d 0 h<' in body
