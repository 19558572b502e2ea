"""Retention with real ``runworker`` processes: one of the fleet trims the stream on its
sweep's turn, once, and never past the entry a dead consumer still holds."""

from __future__ import annotations

import time

import pytest
import redis

from tests.support.entries import GROUP, STREAM
from tests.support.processes import Workers
from tests.support.wait import wait_for
from workers.core.keys import Keys

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]

DAY_MS = 86_400_000


def test_runworkers_trim_once_and_keep_what_a_group_holds(r: redis.Redis, workers: Workers) -> None:
    start = int(time.time() * 1000) - 10 * DAY_MS
    ids = [str(r.xadd(STREAM, {"event": "{}"}, id=f"{start + i}-0")) for i in range(400)]
    r.xgroup_create(STREAM, GROUP, id="0")
    r.xreadgroup(GROUP, "ghost", {STREAM: ">"})
    r.xack(STREAM, GROUP, *(ids[:200] + ids[201:]))  # the ghost still holds #200
    workers.env["STREAMDESK_RETENTION_S"] = "3600"
    # A long claim idle time: the workers leave the ghost's entry where it is.
    procs = [workers.start(name, "--claim-idle-ms", "600000") for name in ("w-1", "w-2")]
    record_key = Keys().retention(STREAM)
    wait_for(lambda: r.exists(record_key), 30, "the first trim")
    time.sleep(3)  # the other worker's first turn comes a reclaim interval later: let it
    record = r.hgetall(record_key)
    assert record["by"] in ("w-1", "w-2") and record["held_by"] == GROUP
    assert record["cut"] == ids[200] and int(record["trimmed"]) >= 100
    assert set(ids[200:]) <= {e for e, _ in r.xrange(STREAM)}
    logs = [workers.log(name) for name in ("w-1", "w-2")]
    assert sum("retention: trimmed" in log for log in logs) == 1, logs
    assert all(p.poll() is None for p in procs), logs
