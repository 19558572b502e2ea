"""Per agent on the console (issue 31, issue 32 item 2), on a real Redis and database: real
workers run two named agents of one type and a home agent of another (one consumer group
each named agent, the home group for the other), then the Agents page, an agent's page and
its pause, the stream and event pages, the Runs page, ``/api/agents/`` and ``/metrics`` are
read through the real URL map."""

from __future__ import annotations

import re
from dataclasses import replace
from typing import Any

import pytest
import redis
from django.test import Client

from tests.support.console import HTMX
from tests.support.engine import STREAM, AnyData, run_fleet, xadd
from tests.support.scrape import parse, value
from workers.core.config import EngineConfig
from workers.core.keys import Keys
from workers.core.registry import Registry
from workers.models import AgentRun

pytestmark = pytest.mark.django_db(transaction=True)

TRIAGE, SUMMARISE = "agents:triage", "agents:summarise"
EVENTS = 20  # summarise fails every 10th for good: 18 succeed, 2 dead-lettered


def fanout_agents() -> Registry:
    registry = Registry()

    @registry.agent("ticket.created", schema=AnyData, name="triage", version="t1")
    async def triage(event: Any, ctx: Any) -> str:
        return "triaged"

    @registry.agent("ticket.created", schema=AnyData, name="summarise", max_deliveries=1)
    async def summarise(event: Any, ctx: Any) -> str:
        if event.data.n % 10 == 0:
            raise RuntimeError(f"cannot summarise ticket {event.data.n}")
        return "summarised"

    @registry.agent("demo.home", schema=AnyData)
    async def home(event: Any, ctx: Any) -> None:
        return None

    return registry


@pytest.fixture
def ran(r: redis.Redis, redis_url: str, config: EngineConfig) -> None:
    for n in range(1, EVENTS + 1):
        xadd(r, {"type": "ticket.created", "source": "t", "id": f"e{n}", "data": {"n": n}})
    for n in range(3):
        xadd(r, {"type": "demo.home", "source": "t", "id": f"h{n}", "data": {}})
    run_fleet(redis_url, replace(config, max_deliveries=1), fanout_agents())


def row(html: str, agent: str) -> str:
    return html.split(f'<tr data-agent="{agent}">')[1].split("</tr>")[0]


def cell(html: str, agent: str, metric: str) -> str:
    found = re.search(rf'data-metric="{metric}"[^>]*>(.*?)</td>', row(html, agent), re.S)
    assert found, row(html, agent)
    return re.sub(r"<[^>]+>", "", found.group(1)).strip()


def test_agents_fanout_page_lists_each_agent_with_its_groups_counters(
    ran: None, staff_client: Client
) -> None:
    html = staff_client.get("/agents/").content.decode()
    # One row per agent: the two named ones apart, the home agent by its type.
    assert 'href="/agents/triage/"' in html and 'href="/agents/summarise/"' in html
    assert 'href="/agents/demo.home/"' in html
    assert cell(html, "triage", "processed") == str(EVENTS)
    assert cell(html, "summarise", "processed") == str(EVENTS - 2)
    assert cell(html, "summarise", "dead_lettered") == "2"
    assert cell(html, "triage", "dead_lettered") == "0"
    assert cell(html, "summarise", "runs_24h") == str(EVENTS)
    assert cell(html, "summarise", "failed_pct") == "10.0%"
    assert cell(html, "triage", "versions") == "t1"
    assert TRIAGE in row(html, "triage") and "ticket.created" in row(html, "triage")
    # The home group's figures once, shared by every agent without a name; its runs by type.
    home = html.split("<tr data-agent-home>")[1].split("</tr>")[0]
    assert re.search(r'data-metric="processed">3<', home)
    assert 'data-metric="shared"' in row(html, "demo.home")
    assert cell(html, "demo.home", "runs_24h") == "3"


def test_agents_fanout_agent_page_of_a_named_agent(ran: None, staff_client: Client) -> None:
    response = staff_client.get("/agents/summarise/")
    assert response.status_code == 200
    html = response.content.decode()
    assert f'data-group="{SUMMARISE}"' in html
    assert re.search(r'data-metric="dead_lettered">2<', html)
    assert re.search(r'data-metric="processed">18<', html)
    assert 'data-metric="failed_1h">10.0%<' in html
    assert "ticket.created" in html  # its type, known by its runs (this console loads none)
    assert 'href="/runs/?agent=summarise"' in html


def test_agents_fanout_unknown_agent_is_404(ran: None, staff_client: Client) -> None:
    assert staff_client.get("/agents/nobody/").status_code == 404


def test_agents_fanout_pause_button_for_operators_only(
    ran: None, operator_client: Client, viewer_client: Client
) -> None:
    assert "Pause agent" in operator_client.get("/agents/triage/").content.decode()
    viewer = viewer_client.get("/agents/triage/").content.decode()
    assert "Pause agent" not in viewer and "Resume agent" not in viewer
    assert 'data-metric="state"><span class="badge ok">running' in viewer


def test_agents_fanout_pause_pauses_that_agents_group_alone(
    ran: None, r: redis.Redis, operator_client: Client
) -> None:
    page = operator_client.get("/agents/triage/").content.decode()
    action = re.search(r'hx-post="([^"]+/act/pause/)"', page)
    assert action and TRIAGE in action[1].replace("~3A", ":"), page
    answer = operator_client.post(action[1], {}, headers=HTMX)
    assert answer.status_code == 200, answer.content
    assert r.get(Keys().paused(STREAM, TRIAGE))
    assert r.get(Keys().paused(STREAM, SUMMARISE)) is None
    assert r.get(Keys().paused(STREAM, "agents")) is None
    after = operator_client.get("/agents/triage/").content.decode()
    assert "Resume agent" in after and "Pause agent" not in after
    assert "Pause agent" in operator_client.get("/agents/summarise/").content.decode()
    listing = operator_client.get("/agents/").content.decode()
    assert 'data-metric="paused"' in row(listing, "triage")
    assert 'data-metric="paused"' not in row(listing, "summarise")
    audit = operator_client.get("/audit/").content.decode()
    assert "pause" in audit and TRIAGE in audit


def test_agents_fanout_stream_page_labels_each_group(ran: None, staff_client: Client) -> None:
    html = staff_client.get(f"/streams/{STREAM}/").content.decode()
    assert 'data-group-agent="home"' in html
    assert 'data-group-agent="triage"' in html and 'data-group-agent="summarise"' in html
    group = staff_client.get(f"/streams/{STREAM}/groups/{SUMMARISE}/").content.decode()
    assert 'data-group-agent="summarise"' in group
    # Each entry's state from all its runs: done once both agents' are, dead if one's is.
    states = re.findall(r'<span class="badge [a-z]*" data-state="(\w+)"', html)
    assert sorted(states) == sorted(["dead"] * 2 + ["done"] * (EVENTS - 2 + 3)), states


def test_agents_fanout_event_page_shows_every_run_side_by_side(
    ran: None, staff_client: Client
) -> None:
    # The event summarise dead-lettered: triage ran it too.
    dead = AgentRun.objects.filter(agent="summarise", status="dead").first()
    assert dead is not None
    first = AgentRun.objects.get(agent="triage", event_key=dead.event_key)
    event = first.event_key
    assert event and first.event_hash != event
    # A forced replay of the triage run: a new row, linked to the one it repeats.
    replay = AgentRun.objects.get(pk=first.pk)
    replay.pk, replay.event_hash, replay.replay_of = None, "f" * 64, first.event_hash
    replay.version = "t2"
    replay.save()
    html = staff_client.get(f"/events/{event}/").content.decode()
    runs = re.findall(r'<th scope="col" id="run-([0-9a-f]{64})"', html)
    assert len(runs) == 3 and {first.event_hash, "f" * 64} <= set(runs)
    assert ">triage<" in html and ">summarise<" in html
    assert f'data-replay-of="{first.event_hash}"' in html
    assert "cannot summarise ticket" in html and "&quot;triaged&quot;" in html
    assert 'data-metric="version">t2<' in html and 'data-metric="version">t1<' in html
    # From one run's own hash, the same side by side.
    again = staff_client.get(f"/events/{first.event_hash}/").content.decode()
    assert re.findall(r'<th scope="col" id="run-([0-9a-f]{64})"', again) == runs


def test_agents_fanout_runs_page_filters_by_agent_and_version(
    ran: None, staff_client: Client
) -> None:
    named = staff_client.get("/runs/?agent=summarise").content.decode()
    assert named.count('data-agent="summarise"') == EVENTS
    assert 'data-agent="triage"' not in named
    home = staff_client.get("/runs/?agent=demo.home").content.decode()
    assert home.count("<tr data-run=") == 3 and 'data-agent="' not in home
    versioned = staff_client.get("/runs/?agent=triage&version=t1").content.decode()
    assert versioned.count('data-agent="triage"') == EVENTS
    none = staff_client.get("/runs/?agent=triage&version=nope").content.decode()
    assert "<tr data-run=" not in none
    api = staff_client.get("/api/runs/?agent=summarise&status=dead").json()
    assert len(api["runs"]) == 2 and {x["agent"] for x in api["runs"]} == {"summarise"}


def test_agents_fanout_api_agents_one_object_per_agent(ran: None, staff_client: Client) -> None:
    agents = {a["name"]: a for a in staff_client.get("/api/agents/").json()["agents"]}
    assert {"triage", "summarise", "demo.home"} <= set(agents)
    summarise = agents["summarise"]
    assert summarise["group"] == SUMMARISE and summarise["agent"] == "summarise"
    assert summarise["event_type"] == "ticket.created"
    assert summarise["counters"]["dead_lettered"] == 2
    assert summarise["counters"]["processed"] == EVENTS - 2
    assert summarise["failed"]["1h"]["pct"] == 10.0
    assert summarise["groups"][0]["stream"] == STREAM and summarise["paused"] is False
    assert summarise["runs_read"]["ended"] == EVENTS
    assert agents["demo.home"]["agent"] == "" and agents["demo.home"]["group"] == "agents"
    assert agents["demo.home"]["runs"] == 3  # its type's histogram, as before names
    # /api/streams/ labels each group with its agent, with the group's own counters.
    groups = {
        g["name"]: g for g in staff_client.get("/api/streams/").json()["streams"][0]["groups"]
    }
    assert groups[SUMMARISE]["agent"] == "summarise" and groups["agents"]["agent"] == ""
    assert groups[SUMMARISE]["counters"]["dead_lettered"] == 2


def test_agents_fanout_metrics_count_per_group_with_its_agent(
    ran: None, settings: Any, r: redis.Redis
) -> None:
    settings.STREAMDESK_METRICS_TOKEN = "t"
    settings.STREAMDESK_METRICS_ALLOW = []
    body = Client().get("/metrics", HTTP_AUTHORIZATION="Bearer t").content.decode()
    families = parse(body)
    name = "streamdesk_group_events_total"

    def count(group: str, agent: str, outcome: str) -> float:
        labels = {"stream": STREAM, "group": group, "agent": agent, "outcome": outcome}
        return value(families, name, **labels)

    assert count(SUMMARISE, "summarise", "dead_lettered") == 2
    assert count(SUMMARISE, "summarise", "processed") == EVENTS - 2
    assert count(TRIAGE, "triage", "processed") == EVENTS
    assert count("agents", "", "processed") == 3
    # The stream's own series are unchanged: the totals over every group.
    assert value(families, "streamdesk_events_processed_total", stream=STREAM) == (
        EVENTS + EVENTS - 2 + 3
    )


def test_agents_fanout_tick_renders_each_agents_live_figures(ran: None) -> None:
    from console.live import realtime
    from console.live.ticker import make_sampler

    tick = make_sampler().tick()
    assert tick is not None
    part = realtime.agent_key("summarise")
    assert 'data-metric="dead_lettered">2<' in tick.fragments[part]
    assert "Pause agent" in tick.fragments[realtime.operator_variant(part)]
    assert "Pause agent" not in tick.fragments[part]


def test_agents_fanout_overview_table_has_a_row_per_agent(ran: None, staff_client: Client) -> None:
    html = staff_client.get("/").content.decode()
    table = html.split("data-agent-table")[1]
    assert 'href="/agents/triage/"' in table and 'href="/agents/summarise/"' in table
    assert "ticket.created" in row(table, "summarise")  # its type, from its runs
    assert cell(table, "summarise", "failed_pct") == "10.0% of 20"
    assert cell(table, "summarise", "group") == SUMMARISE


def test_agents_fanout_dead_letters_say_whose(ran: None, staff_client: Client) -> None:
    html = staff_client.get(f"/streams/{STREAM}/dead/").content.decode()
    assert html.count(f'data-letter-group="{SUMMARISE}"') == 2
