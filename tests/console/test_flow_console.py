"""Flow control on the console (issue 29, item 6): the group page lists the busiest keys
with their running and waiting counts, a pending entry held back by its key says so ("waiting
for key order/981, 2 ahead"), and the workers page lists each agent's flow settings. The
queues are written by the engine's own read script (``workers.flow.Flow``)."""

from __future__ import annotations

import asyncio
import json
import re
from dataclasses import replace
from typing import Any

import pytest
import redis
from django.test import Client
from redis import asyncio as aredis

from tests.support.console import HTMX
from tests.support.engine import STREAM, AnyData
from tests.support.entries import live_consumer
from workers.core.config import EngineConfig
from workers.core.registry import Registry
from workers.flow import Flow
from workers.redis import bus

pytestmark = pytest.mark.django_db(transaction=True)

GROUP_PAGE = f"/streams/{STREAM}/groups/agents/"


async def _console_probe(event: Any, ctx: Any) -> None:
    return None


def publish(r: redis.Redis, subject: str, n: int) -> list[str]:
    ids = []
    for i in range(n):
        event = {"type": "t.keyed", "source": "t", "id": f"{subject}-{i}", "subject": subject}
        ids.append(str(r.xadd(STREAM, {"event": json.dumps({**event, "data": {}})})))
    return ids


def row_cells(row: str) -> list[str]:
    cells = re.findall(r"<td[^>]*>(.*?)</td>", row, re.S)
    return [re.sub(r"<[^>]+>|\s+", " ", c).strip() for c in cells]


async def read(url: str, consumer: str, want: int) -> list[str]:
    registry = Registry()
    registry.agent("t.keyed", schema=AnyData, key="subject")(_console_probe)
    client = aredis.Redis.from_url(url, decode_responses=True)
    try:
        await bus.ensure_group(client, STREAM, "agents")
        flow = Flow(client, replace(EngineConfig(), consumer=consumer), registry, asyncio.Event())
        batch = (await flow.read(want, "streamdesk:paused:none")).batch
        return [d.entry_id for d in batch]
    finally:
        await client.aclose()


def state_cells(html: str) -> dict[str, str]:
    rows = re.findall(r'/entries/([0-9-]+)/">[^<]+</a></td><td class="mono">[^<]*</td>'
                      r'<td class="num">(.*?)</td>', html, re.S)  # fmt: skip
    return {i: re.sub(r"<[^>]+>", "", cell).strip() for i, cell in rows}


@pytest.mark.parametrize("htmx", [False, True], ids=["page", "htmx-partial"])
def test_flow_console_group_page_shows_keys_and_why_an_entry_waits(
    r: redis.Redis, redis_url: str, staff_client: Client, htmx: bool
) -> None:
    hot = publish(r, "order/981", 4)
    cold = publish(r, "order/7", 1)
    runnable = asyncio.run(read(redis_url, "w1", 10))
    live_consumer(r, "w1", group="agents")
    assert runnable == [hot[0], cold[0]]  # the first of each key; three of order/981 wait

    html = staff_client.get(GROUP_PAGE, headers=HTMX if htmx else {}).content.decode()
    cells = state_cells(html)
    assert [cells[i] for i in hot[1:]] == [
        "waiting for key order/981, 1 ahead",
        "waiting for key order/981, 2 ahead",
        "waiting for key order/981, 3 ahead",
    ]
    assert "waiting for key" not in cells[hot[0]] + cells[cold[0]]
    if not htmx:  # the keys table is the page's, above the pending list
        table = re.search(r"<table data-flow-keys>(.*?)</table>", html, re.S)
        assert table, html
        rows = [re.sub(r"<[^>]+>", "|", row) for row in re.findall(r"<tr>(.*?)</tr>", table[1])]
        cells_of = [[c for c in row.split("|") if c] for row in rows[1:]]
        # Both took their last event in the same read: either may be listed first.
        assert sorted(cells_of) == [["t.keyed", "order/7", "1", "0", "1"],
                                    ["t.keyed", "order/981", "1", "3", "1"]]  # fmt: skip
        assert "2 keys with events not yet acked" in html


def test_flow_console_no_keys_table_without_keyed_agents(
    r: redis.Redis, staff_client: Client
) -> None:
    r.xgroup_create(STREAM, "agents", id="0", mkstream=True)
    publish(r, "order/1", 2)
    html = staff_client.get(GROUP_PAGE).content.decode()
    assert "data-flow-keys" not in html and "waiting for key" not in html


def test_flow_console_workers_page_lists_each_agents_flow_settings(
    r: redis.Redis, staff_client: Client, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The console's registry is whatever agent modules it loaded: here, these two.
    registry = Registry()
    registry.agent("t.flow.console", schema=AnyData, key="data.account", concurrency=2)(
        _console_probe
    )
    registry.agent("t.plain", schema=AnyData, timeout_s=30, max_deliveries=2)(_console_probe)
    monkeypatch.setattr("console.views.dashboard.default_registry", registry)
    html = staff_client.get("/workers/").content.decode()
    table = re.search(r"<table data-agents>(.*?)</table>", html, re.S)
    assert table, html
    row = re.search(r"<td class=\"mono\">t\.flow\.console</td>(.*?)</tr>", table[1], re.S)
    assert row, table[1]
    cells = row_cells(row[1])
    assert cells == ["data.account", "2", "none (worker)", "5 (worker)"]
    plain = re.search(r"<td class=\"mono\">t\.plain</td>(.*?)</tr>", table[1], re.S)
    assert plain, table[1]
    cells = row_cells(plain[1])
    assert cells == ["none", "—", "30 s", "2"]
