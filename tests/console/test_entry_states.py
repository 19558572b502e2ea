"""The stream's entry list says, per entry, done / failed / pending / dead, read per page."""

from __future__ import annotations

import re
from typing import Any

import pytest
import redis
from django.test import Client

from console.reads.entry_states import EntryState, Facts, Group, State, judge, read_states
from tests.support.console import process
from tests.support.engine import STREAM, xadd
from workers import publish
from workers.core.config import EngineConfig
from workers.core.events import decode_envelope, event_hash
from workers.core.keys import Keys
from workers.models import AgentRun

pytestmark = pytest.mark.django_db(transaction=True)

PAGE = f"/streams/{STREAM}/"


def states(client: Client) -> dict[str, str]:
    """Entry id -> the state its row shows."""
    body = client.get(PAGE).content.decode()
    rows = re.findall(r'/entries/([0-9-]+)/">[^<]+</a></td><td><span [^>]*data-state="(\w+)"', body)
    return dict(rows)


def test_processed_entries_are_done_and_the_failing_one_dead(
    traffic: list[str], staff_client: Client
) -> None:
    shown = states(staff_client)
    assert [shown[i] for i in traffic] == ["done", "done", "done", "dead"]


def test_an_undecodable_entry_read_by_a_worker_is_dead(
    r: redis.Redis, redis_url: str, config: EngineConfig, staff_client: Client
) -> None:
    ok = publish("demo.echo", {"n": 1})
    junk = xadd(r, "{not json")
    process(redis_url, config)
    assert states(staff_client) == {ok: "done", junk: "dead"}


def test_read_and_unread_entries_are_pending(r: redis.Redis, staff_client: Client) -> None:
    read = xadd(r, {"type": "demo.echo", "id": "e1", "data": {"n": 1}})
    r.xgroup_create(STREAM, "agents", id="0")
    r.xreadgroup("agents", "w1", {STREAM: ">"})
    unread = xadd(r, {"type": "demo.echo", "id": "e2", "data": {"n": 2}})
    r.sadd("streamdesk:stats:streams", STREAM)

    body = staff_client.get(PAGE).content.decode()
    assert states(staff_client) == {read: "pending", unread: "pending"}
    assert 'title="pending in agents (1 deliveries)"' in body
    assert 'title="not read by any group yet"' in body


def test_a_failed_entry_waiting_for_its_retry_is_failed(
    r: redis.Redis, staff_client: Client
) -> None:
    event = {"type": "demo.fail", "id": "f1", "data": {"message": "boom"}}
    entry_id = xadd(r, event)
    r.xgroup_create(STREAM, "agents", id="0")
    r.xreadgroup("agents", "w1", {STREAM: ">"})
    r.sadd("streamdesk:stats:streams", STREAM)
    hashed = event_hash(decode_envelope(r.xrange(STREAM)[0][1]["event"]))
    # What a worker leaves after a failed attempt: the run failed, the gate released.
    r.hset(Keys().gate(hashed), mapping={"state": "released", "token": 1})
    AgentRun.objects.create(
        event_hash=hashed, event_type="demo.fail", stream=STREAM, entry_id=entry_id, status="failed"
    )
    assert states(staff_client) == {entry_id: "failed"}


@pytest.mark.serial  # counts the whole server's commands or subscribers
def test_entry_states_take_a_bounded_number_of_queries(
    r: redis.Redis, staff_client: Client, django_assert_max_num_queries: Any
) -> None:
    for n in range(60):
        xadd(r, {"type": "demo.echo", "id": f"e{n}", "data": {"n": n}})
    r.xgroup_create(STREAM, "agents", id="0")
    r.sadd("streamdesk:stats:streams", STREAM)
    before = r.info("commandstats")
    # Sessions and the user, then the runs and the dead-lettered steps: not one per entry.
    with django_assert_max_num_queries(6):
        assert len(states(staff_client)) == 50
    after = r.info("commandstats")
    xpending = after["cmdstat_xpending"]["calls"] - before.get("cmdstat_xpending", {}).get(
        "calls", 0
    )
    hget = after["cmdstat_hget"]["calls"] - before.get("cmdstat_hget", {}).get("calls", 0)
    # One gate read per row; one PEL read per group (plus the sample's oldest-pending read).
    assert hget == 50 and xpending <= 2


@pytest.mark.parametrize(
    ("facts", "state"),
    [
        (dict(pending_in=[("agents", 2)], run="failed"), State.FAILED),
        (dict(pending_in=[("agents", 1)], gate="running", run="running"), State.PENDING),
        # Released by a deferral or a shutdown, not by a failure.
        (dict(pending_in=[("agents", 1)], gate="released", run="running"), State.PENDING),
        (dict(gate="done"), State.DONE),
        (dict(run="succeeded", dead_lettered=True), State.DONE),  # redriven, then ran
        (dict(run="dead"), State.DEAD),
        (dict(dead_lettered=True), State.DEAD),
        (dict(event_hash=None), State.DEAD),
        (dict(event_hash=None, delivered=False), State.PENDING),
        (dict(), State.UNKNOWN),  # read, nothing recorded
        (dict(delivered=False), State.PENDING),
        (dict(unknown=True, run="succeeded"), State.UNKNOWN),
    ],
)
def test_judge_rule(facts: dict[str, Any], state: State) -> None:
    base: dict[str, Any] = dict(
        event_hash="h", gate=None, pending_in=[], run=None, dead_lettered=False, delivered=True
    )
    found: EntryState = judge(Facts(**{**base, **facts}))
    assert found.state is state


def test_a_group_deleted_since_the_sample_does_not_fail_the_page(r: redis.Redis) -> None:
    entry_id = xadd(r, {"type": "demo.echo", "id": "e1", "data": {"n": 1}})
    entries = [(entry_id, event_hash(decode_envelope(r.xrange(STREAM)[0][1]["event"])))]
    found = read_states(r, Keys(), STREAM, entries, [Group("deleted-meanwhile", "0-0")])
    assert [s.state for s in found] == [State.PENDING]  # not read by any group yet
