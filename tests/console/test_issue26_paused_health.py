"""A paused group's pages, API and metrics read as paused, not stuck (issue 26, item 15):
the same entry, idle far past the claim idle time with a live worker, is stuck until an
operator pauses the group and stuck again once it is resumed."""

from __future__ import annotations

import pytest
import redis
from django.test import Client

from tests.console.test_health_one_source import GROUP, both_marks
from tests.support.console import pending_entries
from tests.support.engine import STREAM
from tests.support.entries import live_consumer
from workers.from_settings import engine_config
from workers.operations import actions

pytestmark = pytest.mark.django_db(transaction=True)


def oldest_state(client: Client) -> str:
    [stream] = client.get("/api/streams/").json()["streams"]
    [group] = [g for g in stream["groups"] if g["name"] == GROUP]
    return str(group["oldest_pending"]["state"])


def test_stuck_entry_of_a_paused_group_reads_paused_until_resumed(
    r: redis.Redis, staff_client: Client
) -> None:
    ids = pending_entries(r, count=1)
    live_consumer(r, "w1", group=GROUP)
    stuck_ms = engine_config().claim_idle_ms * 10
    r.xclaim(STREAM, GROUP, "w1", 0, ids, idle=stuck_ms, justid=True)
    keys = engine_config().keys
    assert both_marks(staff_client)[1][0] == "bad" and oldest_state(staff_client) == "stuck"

    actions.pause(r, keys, STREAM, GROUP, "ops")
    on_stream, on_group = both_marks(staff_client)
    assert on_stream == on_group == ("warn", "check", "paused by ops")
    assert oldest_state(staff_client) == "paused"
    page = staff_client.get(f"/streams/{STREAM}/groups/{GROUP}/").content.decode()
    assert '<div class="value" data-metric="oldest"><span data-state="paused">paused' in page
    # The pending table says the same of the entry's own row.
    assert page.count('data-state="paused"') == 2 and 'data-state="stuck"' not in page

    actions.resume(r, keys, STREAM, GROUP)
    assert both_marks(staff_client)[1][0] == "bad" and oldest_state(staff_client) == "stuck"
