"""Ghost consumers against a real ``runworker``: its housekeeping prunes a consumer no process
reads for (audited), keeps one holding an entry, and its heartbeat makes it a claim target."""

from __future__ import annotations

import pytest
import redis

from tests.support.entries import GROUP, STREAM, pending_entries
from tests.support.processes import Workers
from tests.support.wait import wait_for
from workers import operations
from workers.core.errors import InvalidAction
from workers.core.keys import Keys
from workers.models import AuditRecord, Door
from workers.operations import Actor
from workers.redis.consumers import pruned_field

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]

ALICE = Actor("alice", Door.CONSOLE)
KEYS = Keys()


def consumers(r: redis.Redis) -> dict[str, int]:
    return {str(c["name"]): int(c["pending"]) for c in r.xinfo_consumers(STREAM, GROUP)}


def test_runworker_prunes_a_ghost_and_is_the_claim_target(r: redis.Redis, workers: Workers) -> None:
    ids = pending_entries(r, 1, consumer="ghost-busy")  # holds an entry: never pruned
    r.xgroup_createconsumer(STREAM, GROUP, "ghost-empty")
    workers.env["STREAMDESK_CONSUMER_PRUNE_S"] = "1"
    # A long claim idle time: the worker leaves ghost-busy's entry where it is.
    proc = workers.start("w-live", "--claim-idle-ms", "600000")

    wait_for(lambda: "ghost-empty" not in consumers(r), 30, "ghost-empty to be pruned")
    assert consumers(r) == {"ghost-busy": 1, "w-live": 0}
    assert r.hget(Keys().stats(STREAM), pruned_field(GROUP)) == "1"
    wait_for(lambda: AuditRecord.objects.exists(), 10, "the prune's audit record")
    record = AuditRecord.objects.get()
    assert (record.actor, record.door, record.action, record.target) == (
        "housekeeping",
        "engine",
        "prune-consumer",
        {"consumer": "ghost-empty"},
    )

    # The worker's heartbeat makes it a target; the ghost holding an entry is none.
    with pytest.raises(InvalidAction, match="'ghost-busy' has no runworker heartbeat"):
        operations.claim(ALICE, STREAM, GROUP, ids, "ghost-busy", client=r, keys=KEYS)
    out = operations.claim(ALICE, STREAM, GROUP, ids, "w-live", client=r, keys=KEYS)
    assert (out.outcome, out.count) == ("ok", 1)
    assert proc.poll() is None, workers.log("w-live")
