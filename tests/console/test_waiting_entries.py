"""An entry the engine holds back reads "waiting, retry at hh:mm:ss" on every page that shows it.

The hold is written as the engine's settler writes it (workers/engine/settle.py): the entry's
idle time set to ``claim idle - wait`` by XCLAIM, and its due time recorded by the engine's own
``queue_waits`` (workers/engine/waits.py). Every expected clock is read back from Redis
(ZMSCORE), so a page that drops the schedule, shows the wrong entry's time or falls back to
the idle time fails here.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime

import pytest
import redis
from django.test import Client

from tests.support.console import HTMX, pending_entries
from tests.support.engine import STREAM
from tests.support.entries import live_consumer
from workers.core.keys import Keys
from workers.engine.waits import queue_waits
from workers.from_settings import engine_config

pytestmark = pytest.mark.django_db(transaction=True)

GROUP = "agents"
GROUP_PAGE = f"/streams/{STREAM}/groups/{GROUP}/"
# Retries due this far ahead: none comes due while a test reads its pages, and each is under
# a minute, so the page says "(in N.N s)".
WAITS_MS = [40_000, 20_000, 55_000]


def hold_back(r: redis.Redis, ids: list[str], waits_ms: list[int]) -> dict[str, int]:
    """Hold each entry back for its wait, as the settler does; returns id -> due time (ms)."""
    claim_idle_ms = engine_config().claim_idle_ms
    for entry_id, wait_ms in zip(ids, waits_ms, strict=True):
        with r.pipeline(transaction=False) as pipe:
            idle_ms = claim_idle_ms - wait_ms
            pipe.xclaim(STREAM, GROUP, "w1", 0, [entry_id], idle=idle_ms, justid=True)
            queue_waits(pipe, Keys(), STREAM, GROUP, [entry_id], wait_ms)  # type: ignore[arg-type]
            pipe.execute()
    dues = r.zmscore(Keys().waits(STREAM, GROUP), ids)
    return {i: int(d) for i, d in zip(ids, dues, strict=True) if d is not None}


def clock(due_ms: int) -> str:
    return datetime.fromtimestamp(due_ms / 1000, tz=UTC).strftime("%H:%M:%S UTC")


def in_s(text: str) -> float:
    found = re.search(r"\(in ([\d.]+) s\)", text)
    assert found, text
    return float(found.group(1))


@pytest.fixture
def held(r: redis.Redis) -> dict[str, int]:
    """Three pending entries of a live worker, each held back for its own retry."""
    ids = pending_entries(r, count=3)
    live_consumer(r, "w1", group=GROUP)
    return hold_back(r, ids, WAITS_MS)


def test_overview_shows_the_oldest_pending_as_waiting_with_its_retry_time(
    held: dict[str, int], staff_client: Client
) -> None:
    oldest = min(held, key=lambda i: tuple(map(int, i.split("-"))))
    html = staff_client.get("/").content.decode()
    cell = re.search(r'<td class="num" data-metric="oldest">(.*?)</td>', html, re.S)
    assert cell, html
    assert 'data-state="waiting"' in cell.group(1)
    assert f"waiting, retry at {clock(held[oldest])}" in cell.group(1)
    assert 0 < in_s(cell.group(1)) <= WAITS_MS[0] / 1000
    # Held back on purpose is no trouble: the group and the stream stay healthy.
    assert "needs attention" not in html and 'class="badge ok">healthy' in html


def test_group_page_shows_the_oldest_pending_as_waiting_with_its_retry_time(
    held: dict[str, int], staff_client: Client
) -> None:
    oldest = next(iter(held))
    html = staff_client.get(GROUP_PAGE).content.decode()
    stat = re.search(
        r'<div class="value" data-metric="oldest">(.*?)</div><div class="sub">(.*?)</div>', html
    )
    assert stat, html
    assert stat.group(1) == '<span data-state="waiting">waiting</span>'
    words = re.sub(r"<[^>]+>", "", stat.group(2))
    assert words.startswith(f"retry at {clock(held[oldest])} (in "), words
    assert 0 < in_s(stat.group(2)) <= WAITS_MS[0] / 1000


def pending_rows(html: str) -> dict[str, str]:
    """Entry id -> what its Idle cell on the pending list says."""
    rows = re.findall(r'/entries/([0-9-]+)/">[^<]+</a></td><td class="mono">[^<]*</td>'
                      r'<td class="num">(.*?)</td>', html, re.S)  # fmt: skip
    return dict(rows)


@pytest.mark.parametrize("htmx", [False, True], ids=["page", "htmx-partial"])
def test_pending_rows_show_each_entrys_own_due_time(
    held: dict[str, int], staff_client: Client, htmx: bool
) -> None:
    headers = HTMX if htmx else {}
    html = staff_client.get(GROUP_PAGE, headers=headers).content.decode()
    rows = pending_rows(html)
    assert set(rows) == set(held), html
    for entry_id, due_ms in held.items():
        assert 'data-state="waiting"' in rows[entry_id]
        # The "(in N s)" is its own span, counted down by the browser (data-due-ms).
        assert f"waiting, retry at {clock(due_ms)} (in " in re.sub(r"<[^>]+>", "", rows[entry_id])
        assert f'data-due-ms="{due_ms}"' in rows[entry_id]
    ahead = [in_s(rows[i]) for i in held]
    # Each row its own schedule, in the order they were held back for.
    assert ahead[1] < ahead[0] < ahead[2]


def test_an_entry_retried_now_is_no_longer_shown_waiting(
    r: redis.Redis, held: dict[str, int], staff_client: Client
) -> None:
    """ "Retry now" resets the idle time, not the recorded due time: the page believes the
    idle time then, and says the entry is reclaimable (not waiting until its old due time)."""
    first = next(iter(held))
    r.xclaim(STREAM, GROUP, "w1", 0, [first], idle=engine_config().claim_idle_ms, justid=True)
    rows = pending_rows(staff_client.get(GROUP_PAGE).content.decode())
    assert 'data-state="reclaimable"' in rows[first]
    assert "retry at" not in rows[first]
    assert all('data-state="waiting"' in rows[i] for i in held if i != first)


def test_a_retry_just_due_reads_retry_due_not_a_long_idle_time(
    r: redis.Redis, held: dict[str, int], staff_client: Client
) -> None:
    """A wait that ended a second ago and no worker has reclaimed it yet: the page says when
    the retry was due, not "idle 1 min 1 s" for an entry published seconds ago."""
    first = next(iter(held))
    due_ms = int(r.time()[0]) * 1000 - 1_000
    idle_ms = engine_config().claim_idle_ms + 1_000
    r.xclaim(STREAM, GROUP, "w1", 0, [first], idle=idle_ms, justid=True)
    r.zadd(Keys().waits(STREAM, GROUP), {first: due_ms})
    html = staff_client.get(GROUP_PAGE).content.decode()
    assert f"reclaimable, retry due at {clock(due_ms)}" in pending_rows(html)[first]
    assert f"retry due at {clock(due_ms)}</div>" in html  # the oldest pending's stat
