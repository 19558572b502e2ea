"""Ghost consumers (issue 14 item 6): claim targets must be live, a claim that moves nothing
creates nothing, and housekeeping prunes consumers no process reads for, audited."""

from __future__ import annotations

import asyncio
from io import StringIO

import pytest
import redis
import redis.asyncio as aredis
from django.core.management import CommandError, call_command

from tests.support.entries import GROUP, STREAM, live_consumer, pending_entries
from workers import operations
from workers.core.errors import InvalidAction
from workers.core.keys import Keys
from workers.engine.housekeeping import record_pruned
from workers.models import AuditRecord, Door
from workers.monitor.sample import collect
from workers.operations import Actor, actions
from workers.redis import consumers as group_consumers
from workers.redis.consumers import PRUNE, Target, pruned_field

pytestmark = pytest.mark.django_db

ALICE = Actor("alice", Door.CONSOLE)
KEYS = Keys()


def consumers(r: redis.Redis) -> dict[str, int]:
    """The group's consumers and their pending counts, as Redis has them."""
    return {str(c["name"]): int(c["pending"]) for c in r.xinfo_consumers(STREAM, GROUP)}


def run(*args: str) -> str:
    out = StringIO()
    call_command(*args, stdout=out, stderr=StringIO())
    return out.getvalue()


def prune(redis_url: str, own: str = "me", min_idle_ms: int = 0) -> list[group_consumers.Pruned]:
    async def go() -> list[group_consumers.Pruned]:
        client = aredis.Redis.from_url(redis_url, decode_responses=True)
        try:
            return await group_consumers.prune(client, KEYS, STREAM, GROUP, own, min_idle_ms)
        finally:
            await client.aclose()

    return asyncio.run(go())


# -- claim targets ---------------------------------------------------------------------------


def test_claim_to_a_name_without_heartbeat_is_refused_and_creates_nothing(
    r: redis.Redis,
) -> None:
    ids = pending_entries(r, 2)
    live_consumer(r, "w-live")
    with pytest.raises(InvalidAction) as caught:
        operations.claim(ALICE, STREAM, GROUP, ids, "someone", client=r, keys=KEYS)
    assert caught.value.field == "consumer"
    assert "'someone' is not a live consumer of group 'agents'" in str(caught.value)
    assert "live consumers: 'w-live'" in str(caught.value)
    assert consumers(r) == {"old": 2, "w-live": 0}
    record = AuditRecord.objects.get()
    assert (record.action, record.outcome, record.count) == ("claim", "refused", 0)


def test_claim_to_a_consumer_of_the_group_without_heartbeat_is_refused(r: redis.Redis) -> None:
    ids = pending_entries(r, 1)
    with pytest.raises(InvalidAction, match="'gone' is not a live consumer"):
        operations.claim_all(ALICE, STREAM, GROUP, "old", "gone", client=r, keys=KEYS)
    r.xgroup_createconsumer(STREAM, GROUP, "gone")  # a consumer, but no process: still refused
    with pytest.raises(InvalidAction, match="'gone' has no runworker heartbeat"):
        operations.claim(ALICE, STREAM, GROUP, ids, "gone", client=r, keys=KEYS)
    assert consumers(r) == {"old": 1, "gone": 0}


def test_claim_to_a_worker_of_another_group_is_refused(r: redis.Redis) -> None:
    ids = pending_entries(r, 1)
    live_consumer(r, "w-other", group="others")
    with pytest.raises(InvalidAction, match="not a live consumer"):
        operations.claim(ALICE, STREAM, GROUP, ids, "w-other", client=r, keys=KEYS)
    assert "w-other" not in consumers(r)


def test_claim_to_a_live_consumer_moves_the_entries(r: redis.Redis) -> None:
    ids = pending_entries(r, 2)
    live_consumer(r, "w-live")
    out = operations.claim(ALICE, STREAM, GROUP, ids, "w-live", client=r, keys=KEYS)
    assert (out.outcome, out.count) == ("ok", 2)
    assert consumers(r) == {"old": 0, "w-live": 2}


def test_claim_that_moves_nothing_creates_no_consumer(r: redis.Redis) -> None:
    ids = pending_entries(r, 1)
    r.xack(STREAM, GROUP, *ids)
    result = actions.claim(r, STREAM, GROUP, [*ids, "9-9"], "someone")
    assert (result.done, result.skipped) == ([], [*ids, "9-9"])
    assert "someone" not in consumers(r)


def test_claim_of_entries_whose_payload_is_gone_creates_no_consumer(r: redis.Redis) -> None:
    ids = pending_entries(r, 1)
    r.xdel(STREAM, *ids)  # still pending, nothing left to run
    assert actions.claim(r, STREAM, GROUP, ids, "someone").done == []
    assert consumers(r) == {"old": 1}


def test_any_target_claim_that_moves_nothing_is_a_noop(r: redis.Redis) -> None:
    pending_entries(r, 1)
    out = operations.claim(
        ALICE, STREAM, GROUP, ["9-9"], "someone", target=Target.ANY, client=r, keys=KEYS
    )
    assert (out.outcome, out.count, out.skipped) == ("noop", 0, 1)
    assert AuditRecord.objects.get().outcome == "noop"
    assert "someone" not in consumers(r)


# -- the command line ------------------------------------------------------------------------


def test_cli_claim_to_an_unknown_consumer_is_refused_unless_create(r: redis.Redis) -> None:
    ids = pending_entries(r, 2)
    with pytest.raises(CommandError, match="--create claims to it anyway") as caught:
        run("claim", ids[0], "--to", "someone")
    assert "'someone' has no runworker heartbeat and is not a consumer of" in str(caught.value)
    assert "someone" not in consumers(r)
    assert run("claim", ids[0], "--to", "someone", "--create").startswith(
        f"claim on {STREAM} group {GROUP}: ok, 1 done"
    )
    # Now a consumer of the group: the command line takes it without --create.
    run("claim", ids[1], "--to", "someone")
    assert consumers(r) == {"old": 0, "someone": 2}
    outcomes = list(AuditRecord.objects.order_by("id").values_list("outcome", flat=True))
    assert outcomes == ["refused", "ok", "ok"]


def test_cli_claim_that_moves_nothing_creates_nothing_and_exits_1(r: redis.Redis) -> None:
    """The issue's case: ``claim --to someone`` on an id that is not pending."""
    pending_entries(r, 1)
    with pytest.raises(CommandError, match="nothing done") as caught:
        run("claim", "9-9", "--to", "someone", "--create")
    assert caught.value.returncode == 1
    assert "someone" not in consumers(r)
    assert AuditRecord.objects.get().outcome == "noop"


# -- pruning ---------------------------------------------------------------------------------


def test_prune_removes_a_consumer_with_no_heartbeat_and_nothing_pending(
    r: redis.Redis, redis_url: str
) -> None:
    pending_entries(r, 1, consumer="busy")
    r.xgroup_createconsumer(STREAM, GROUP, "ghost")
    live_consumer(r, "w-live")
    r.xgroup_createconsumer(STREAM, GROUP, "me")
    pruned = prune(redis_url, own="me")
    assert [(p.consumer, p.group) for p in pruned] == [("ghost", GROUP)]
    # Kept: one holding an entry (deleting it would drop the entry), a live worker, the caller.
    assert consumers(r) == {"busy": 1, "w-live": 0, "me": 0}
    assert r.hget(KEYS.stats(STREAM), pruned_field(GROUP)) == "1"


def test_prune_keeps_a_consumer_that_read_recently(r: redis.Redis, redis_url: str) -> None:
    r.xgroup_create(STREAM, GROUP, id="$", mkstream=True)
    r.xgroup_createconsumer(STREAM, GROUP, "ghost")
    assert prune(redis_url, min_idle_ms=60_000) == []
    assert "ghost" in consumers(r)


def test_prune_script_keeps_a_consumer_that_got_an_entry_in_between(r: redis.Redis) -> None:
    """Chosen with nothing pending, given an entry before the script runs: kept."""
    ids = pending_entries(r, 1, consumer="old")
    r.xgroup_createconsumer(STREAM, GROUP, "ghost")
    r.xclaim(STREAM, GROUP, "ghost", 0, ids, justid=True)
    args = [GROUP, "ghost", 0, pruned_field(GROUP)]
    assert r.eval(PRUNE, 2, STREAM, KEYS.stats(STREAM), *args) == 0
    assert consumers(r)["ghost"] == 1
    r.xack(STREAM, GROUP, *ids)
    assert r.eval(PRUNE, 2, STREAM, KEYS.stats(STREAM), *args) == 1


def test_each_pruned_consumer_is_audited_by_housekeeping(r: redis.Redis, redis_url: str) -> None:
    r.xgroup_create(STREAM, GROUP, id="$", mkstream=True)
    r.xgroup_createconsumer(STREAM, GROUP, "ghost")
    record_pruned(prune(redis_url))
    record = AuditRecord.objects.get()
    assert (record.actor, record.door, record.action, record.outcome) == (
        "housekeeping",
        "engine",
        "prune-consumer",
        "ok",
    )
    assert (record.stream, record.group, record.target, record.count) == (
        STREAM,
        GROUP,
        {"consumer": "ghost"},
        1,
    )


def test_the_sample_says_how_many_consumers_were_pruned(r: redis.Redis, redis_url: str) -> None:
    r.xgroup_create(STREAM, GROUP, id="$", mkstream=True)
    r.sadd(KEYS.streams_index, STREAM)
    for name in ("ghost-1", "ghost-2"):
        r.xgroup_createconsumer(STREAM, GROUP, name)
    assert len(prune(redis_url)) == 2
    group = collect(r, KEYS).group(STREAM, GROUP)
    assert group is not None and group.consumers_pruned == 2
