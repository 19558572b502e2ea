"""Issue 32 item 4: the group page's pending entries and retry queue, and the dead letters,
update live, read once per tick per table shown by a console process (never per tab)."""

from __future__ import annotations

import asyncio
import re
from datetime import UTC, datetime

import pytest
import redis
from django.test import Client

from console.live import realtime, ticker
from console.live.realtime import DEAD_TABLE, PENDING_TABLE, RETRIES_TABLE, table_key
from tests.support.actions import hash_of
from tests.support.console import dead_letters, next_tick, open_socket, pending_entries
from tests.support.engine import STREAM
from tests.support.entries import live_consumer
from workers.core.keys import Keys
from workers.core.steps import Kind
from workers.engine.waits import queue_waits
from workers.from_settings import engine_config
from workers.models import TimelineStep

pytestmark = pytest.mark.django_db(transaction=True)

GROUP = "agents"
GROUP_PAGE = f"/streams/{STREAM}/groups/{GROUP}/"
PENDING = table_key(PENDING_TABLE, STREAM, GROUP)
RETRIES = table_key(RETRIES_TABLE, STREAM, GROUP)
DEAD = table_key(DEAD_TABLE, STREAM)


def hold_back(r: redis.Redis, entry_id: str, wait_ms: int) -> int:
    """Hold the entry back for a retry, as the settler does; its due time (ms)."""
    with r.pipeline(transaction=False) as pipe:
        idle_ms = engine_config().claim_idle_ms - wait_ms
        pipe.xclaim(STREAM, GROUP, "w1", 0, [entry_id], idle=idle_ms, justid=True)
        queue_waits(pipe, Keys(), STREAM, GROUP, [entry_id], wait_ms)  # type: ignore[arg-type]
        pipe.execute()
    return int(r.zscore(Keys().waits(STREAM, GROUP), entry_id) or 0)


def failed_once(entry_id: str) -> None:
    TimelineStep.objects.create(
        event_hash=hash_of({"type": "demo.echo", "id": "e0", "data": {"n": 0}}),
        stream=STREAM,
        entry_id=entry_id,
        at=datetime.now(UTC),
        kind=Kind.FAILED,
        consumer="w1",
        attempt=1,
        detail="RuntimeError: the API answered 502; retry in 2000 ms\n\nTraceback ...",
    )


def test_table_keys_round_trip_any_name() -> None:
    for stream, group in (("a:b", "c:d"), ('q"\\', ""), ("ünï", "g")):
        assert realtime.parse_table_key(table_key(PENDING_TABLE, stream, group))[1:] == (
            stream,
            group,
        )
    for bad in ("table:pending:", "table:x:[]", "table:dead:" + "[" * 5000, "overview"):
        with pytest.raises(ValueError):
            realtime.parse_table_key(bad)


def test_group_page_marks_its_default_view_live(r: redis.Redis, staff_client: Client) -> None:
    pending_entries(r)
    body = staff_client.get(GROUP_PAGE).content.decode()
    assert f'data-live="{PENDING}"'.replace('"', "&quot;", 0) in body.replace("&quot;", '"')
    assert "data-live-rows" in body
    # A filtered or later page is not the live one: it stays as read.
    filtered = staff_client.get(GROUP_PAGE, {"min_deliveries": 2}).content.decode()
    assert PENDING not in filtered.replace("&quot;", '"')


def test_dead_letters_newest_page_is_live(r: redis.Redis, staff_client: Client) -> None:
    ids = dead_letters(r)
    body = staff_client.get(f"/streams/{STREAM}/dead/").content.decode().replace("&quot;", '"')
    assert DEAD in body and f'data-row="{ids[0]}"' in body
    older = staff_client.get(f"/streams/{STREAM}/dead/", {"before": ids[1]}).content.decode()
    assert DEAD not in older.replace("&quot;", '"')


def test_retry_queue_shows_error_attempt_and_next_attempt(
    r: redis.Redis, staff_client: Client
) -> None:
    ids = pending_entries(r, count=2)
    live_consumer(r, "w1", group=GROUP)
    due_ms = hold_back(r, ids[0], 40_000)
    failed_once(ids[0])
    body = staff_client.get(GROUP_PAGE).content.decode()
    queue = body[body.index("<h2>Retry queue</h2>") : body.index("<h2>Pending entries</h2>")]
    row = re.search(rf'<tr data-row="{ids[0]}">(.*?)</tr>', queue, re.S)
    assert row, queue
    assert "1 of 5" in row.group(1)  # delivered once; dead-lettered after 5
    assert "RuntimeError: the API answered 502" in row.group(1)
    assert f'data-due-ms="{due_ms}"' in row.group(1)
    assert ">failed<" in row.group(1)
    assert f'data-row="{ids[1]}"' not in queue  # not held back: not in the queue


def test_retry_queue_forgets_an_entry_retried_by_hand(
    r: redis.Redis, operator_client: Client
) -> None:
    ids = pending_entries(r, count=1)
    live_consumer(r, "w1", group=GROUP)
    hold_back(r, ids[0], 40_000)
    operator_client.post(f"{GROUP_PAGE}act/retry/", {"ids": ids})
    body = operator_client.get(GROUP_PAGE).content.decode()
    queue = body[body.index("<h2>Retry queue</h2>") : body.index("<h2>Pending entries</h2>")]
    assert "Nothing is held back for a retry now." in queue


@pytest.mark.asyncio
async def test_a_socket_gets_its_live_tables_in_its_roles_variant(
    r: redis.Redis, operator_client: Client, viewer_client: Client
) -> None:
    ids = await asyncio.to_thread(pending_entries, r)
    await asyncio.to_thread(dead_letters, r)
    operator = await open_socket(operator_client, [PENDING, DEAD, RETRIES])
    viewer = await open_socket(viewer_client, [PENDING])
    try:
        seen: dict[str, str] = {}
        for _ in range(20):
            seen.update((await next_tick(operator))["fragments"])
            if {PENDING, DEAD, RETRIES} <= set(seen):
                break
        assert all(f'data-row="{i}"' in seen[PENDING] for i in ids)
        assert 'name="ids"' in seen[PENDING] and "data-keep" in seen[PENDING]
        assert "No pending" not in seen[PENDING] and "Nothing is held back" in seen[RETRIES]
        viewed: dict[str, str] = {}
        while PENDING not in viewed:
            viewed.update((await next_tick(viewer))["fragments"])
        assert f'data-row="{ids[0]}"' in viewed[PENDING] and 'name="ids"' not in viewed[PENDING]
    finally:
        await operator.disconnect()
        await viewer.disconnect()
        await ticker.stop()
