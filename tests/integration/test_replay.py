"""Replay (issue 31 item 3): a range of the stream fed back to one agent, as a bulk job."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
import redis

from tests.support.engine import STREAM, run_fleet
from tests.support.replay import (
    ALICE,
    TYPE,
    copies,
    publish,
    replay_now,
    run_job,
    runs_by_agent,
    start,
    two_agents,
)
from workers.core.config import EngineConfig
from workers.core.errors import InvalidAction
from workers.core.fanout import run_hash
from workers.core.partitions import Partitions
from workers.models import AgentRun, AuditRecord, BulkJob
from workers.operations import jobs

pytestmark = pytest.mark.django_db(transaction=True)


def test_replay_without_force_runs_nothing_new(
    r: redis.Redis, redis_url: str, config: EngineConfig
) -> None:
    registry = two_agents()
    publish(r, 40)
    run_fleet(redis_url, config, registry)
    outcome = start(r, registry, "triage")
    assert (outcome.outcome, outcome.count, outcome.skipped) == ("noop", 0, 40)
    assert "40 already done" in outcome.detail and outcome.job_id is None
    run_fleet(redis_url, config, registry)
    assert runs_by_agent() == {("triage", "succeeded"): 40, ("summarise", "succeeded"): 40}
    assert copies(r) == []


def test_replay_without_force_runs_what_the_agent_never_did(
    r: redis.Redis, redis_url: str, config: EngineConfig
) -> None:
    """A named agent added later starts after the history; replay gives it the history,
    and only it: the other agent's runs stay one per event."""
    publish(r, 30)
    run_fleet(redis_url, config, two_agents(second=False))
    registry = two_agents()
    run_fleet(redis_url, config, registry)  # created after the history: it runs none of it
    assert runs_by_agent() == {("triage", "succeeded"): 30}
    job = replay_now(r, registry, "summarise")
    assert (job.status, job.done, job.skipped, job.total) == ("done", 30, 0, 30)
    assert {f["for"] for f in copies(r)} == {"agents:summarise"}
    run_fleet(redis_url, config, registry)
    assert runs_by_agent() == {("triage", "succeeded"): 30, ("summarise", "succeeded"): 30}
    assert set(AgentRun.objects.values_list("replay_of", flat=True)) == {""}


def test_forced_replay_runs_every_event_once_more_as_new_runs_linked_to_the_old(
    r: redis.Redis, redis_url: str, config: EngineConfig
) -> None:
    registry = two_agents()
    ids = publish(r, 25)
    run_fleet(redis_url, config, registry)
    job = replay_now(r, registry, "triage", force=True)
    assert (job.done, job.skipped) == (25, 0)
    assert [f["replayed_from"] for f in copies(r)] == ids
    run_fleet(redis_url, config, registry)
    assert runs_by_agent() == {("triage", "succeeded"): 50, ("summarise", "succeeded"): 25}
    first = {row.event_key: row for row in AgentRun.objects.filter(agent="triage", replay_of="")}
    again = AgentRun.objects.filter(agent="triage").exclude(replay_of="")
    assert again.count() == 25 and len(first) == 25
    for row in again:  # both kept, the new one linked to the one it repeats
        assert row.replay_of == first[row.event_key].event_hash
        assert row.replay_of == run_hash(row.event_key, "triage")
        assert row.event_hash != row.replay_of and row.status == "succeeded"
    # Run once more, the same job's copies are gate hits: each event ran once per replay.
    run_fleet(redis_url, config, registry)
    assert AgentRun.objects.filter(agent="triage").count() == 50


def test_forced_replay_of_a_home_agent(
    r: redis.Redis, redis_url: str, config: EngineConfig
) -> None:
    """An agent without a name is named by its type; its copies are for the home group."""
    registry = two_agents()
    registry.agent("other.thing", schema=registry.get(TYPE).schema)(_other)
    publish(r, 5, type_="other.thing")
    publish(r, 5)
    run_fleet(redis_url, config, registry)
    job = replay_now(r, registry, "other.thing", force=True)
    assert job.done == 5 and {f["for"] for f in copies(r)} == {"agents"}
    run_fleet(redis_url, config, registry)
    assert runs_by_agent(event_type="other.thing") == {("", "succeeded"): 10}
    assert runs_by_agent(event_type=TYPE)[("triage", "succeeded")] == 5


async def _other(event: object, ctx: object) -> str:
    return "other"


def test_replay_filters_by_range_and_subject(
    r: redis.Redis, redis_url: str, config: EngineConfig
) -> None:
    registry = two_agents()
    first = publish(r, 10, subject="acme/1")
    middle = publish(r, 10, start=11, subject="acme/2")
    publish(r, 10, start=21, subject="acme/1")
    run_fleet(redis_url, config, registry)
    job = replay_now(r, registry, "triage", force=True, start=middle[0], end=middle[-1])
    assert [f["replayed_from"] for f in copies(r)] == middle and job.done == 10
    r.xtrim(STREAM, minid=first[0])  # nothing trimmed, only to keep the test honest
    job = replay_now(r, registry, "triage", force=True, subject="acme/1", end=middle[-1])
    assert job.done == 10
    assert [f["replayed_from"] for f in copies(r)][10:] == first


def test_replay_bounds_may_be_iso_times(r: redis.Redis) -> None:
    registry = two_agents()
    ids = publish(r, 5)
    ms = int(ids[0].split("-")[0])
    at = datetime.fromtimestamp(ms / 1000, UTC).isoformat(timespec="milliseconds")
    dry = start(r, registry, "triage", dry_run=True, start=at, end=at, force=True)
    same_ms = sum(1 for i in ids if i.startswith(f"{ms}-"))
    assert dry.count == same_ms
    before = datetime.fromtimestamp(ms / 1000 - 3600, UTC).isoformat()
    with pytest.raises(InvalidAction, match="nothing in range"):
        start(r, registry, "triage", end=before)


def test_replay_refuses_what_it_cannot_do(r: redis.Redis) -> None:
    registry = two_agents()
    publish(r, 3)
    with pytest.raises(InvalidAction, match=r"no agent is named 'nobody'.*summarise, triage"):
        start(r, registry, "nobody")
    with pytest.raises(InvalidAction, match=r"runs 'ticket\.created' events, not 'other'"):
        start(r, registry, "triage", event_type="other")
    with pytest.raises(InvalidAction, match="neither a stream entry id"):
        start(r, registry, "triage", start="yesterday")
    with pytest.raises(InvalidAction, match=r"starts .* after it ends"):
        start(r, registry, "triage", start="200-0", end="100-0")
    with pytest.raises(InvalidAction, match="nothing in range"):
        start(r, registry, "triage", start="1-0", end="2-0")
    # Refused input that reached the action is audited as refused.
    assert AuditRecord.objects.filter(action="replay", outcome="refused").count() == 1
    assert BulkJob.objects.count() == 0


def test_dry_run_counts_and_changes_nothing(
    r: redis.Redis, redis_url: str, config: EngineConfig
) -> None:
    registry = two_agents()
    publish(r, 30, subject="acme/1")
    publish(r, 10, start=31, type_="other.type")
    run_fleet(redis_url, config, registry, agents=["triage"])  # other.type: dead-lettered
    publish(r, 20, start=41, subject="acme/1")  # not yet run
    length, runs, jobs_before = r.xlen(STREAM), AgentRun.objects.count(), BulkJob.objects.count()
    dry = start(r, registry, "triage", dry_run=True)
    assert (dry.outcome, dry.count, dry.skipped) == ("dry-run", 20, 30)
    assert "60 entries in range, 50 of the agent's events, 30 already done" in dry.detail
    forced = start(r, registry, "triage", dry_run=True, force=True)
    assert (forced.count, forced.skipped) == (50, 30)
    assert r.xlen(STREAM) == length and AgentRun.objects.count() == runs
    assert BulkJob.objects.count() == jobs_before
    assert list(AuditRecord.objects.values_list("outcome", flat=True)) == ["dry-run"] * 2


def test_replay_stopped_and_resumed_copies_each_event_once(r: redis.Redis) -> None:
    registry = two_agents()
    ids = publish(r, 2_300)
    outcome = start(r, registry, "triage", force=True)
    assert outcome.outcome == "queued" and outcome.job_id is not None
    pages = iter(range(100))
    stopped = run_job(r, outcome.job_id, batch=500, should_stop=lambda: next(pages) >= 2)
    assert (stopped.status, stopped.done) == ("queued", 1000)
    assert len(copies(r)) == 1000
    ended = run_job(r, outcome.job_id, owner="runner-b", batch=500)
    assert (ended.status, ended.done, ended.total) == ("done", 2300, 2300)
    assert [f["replayed_from"] for f in copies(r)] == ids  # none twice, none missed
    assert len({f["replay"] for f in copies(r)}) == 1
    record = AuditRecord.objects.get(job_id=outcome.job_id)
    assert (record.outcome, record.count, record.action) == ("ok", 2300, "replay")


def test_replay_cancelled_stops_after_its_batch(r: redis.Redis) -> None:
    registry = two_agents()
    publish(r, 1_500)
    outcome = start(r, registry, "triage", force=True)
    job_id = outcome.job_id or 0

    def cancel_once(job: BulkJob) -> None:
        if job.done == 500:
            jobs.cancel(ALICE, job_id)

    ended = run_job(r, job_id, batch=500, progress=cancel_once)
    assert (ended.status, ended.done) == ("cancelled", 500)
    assert len(copies(r)) == 500
    assert AuditRecord.objects.get(job_id=job_id, action="replay").outcome == "cancelled"


def test_a_runner_without_replay_work_leaves_replay_jobs_alone(r: redis.Redis) -> None:
    registry = two_agents()
    publish(r, 5)
    outcome = start(r, registry, "triage", force=True)
    assert jobs.runnable_jobs() == []
    assert [j.pk for j in jobs.runnable_jobs(kinds={"replay": object()})] == [outcome.job_id]  # type: ignore[dict-item]


def test_replay_makes_a_missing_group_before_its_copies(
    r: redis.Redis, redis_url: str, config: EngineConfig
) -> None:
    """The agent never ran on this stream: had its first worker made its group after the
    other groups acked the copies unread, the group would have started after them."""
    publish(r, 20)
    run_fleet(redis_url, config, two_agents(second=False))
    registry = two_agents()  # summarise is deployed, its workers not started yet
    job = replay_now(r, registry, "summarise")
    assert job.done == 20 and "agents:summarise" in {g["name"] for g in r.xinfo_groups(STREAM)}
    run_fleet(redis_url, config, two_agents(second=False))  # the others ack the copies
    run_fleet(redis_url, config, registry)
    assert runs_by_agent() == {("triage", "succeeded"): 20, ("summarise", "succeeded"): 20}


def test_replay_of_a_partitioned_stream_copies_into_each_partition(r: redis.Redis) -> None:
    """Each copy goes back into the partition its event came from; the job walks the
    partitions one after the other, its cursor naming the partition."""
    streams = Partitions(STREAM, 3).streams
    originals = {s: publish(r, 7 + i, stream=s) for i, s in enumerate(streams)}
    outcome = start(r, two_agents(), "triage", force=True, streams=streams)
    assert outcome.job_id is not None
    assert BulkJob.objects.get(pk=outcome.job_id).total == 7 + 8 + 9
    pages = iter(range(100))
    stopped = run_job(r, outcome.job_id, batch=5, should_stop=lambda: next(pages) >= 3)
    assert stopped.status == "queued" and stopped.cursor.startswith("1:")
    ended = run_job(r, outcome.job_id, owner="runner-b", batch=5)
    assert (ended.status, ended.done) == ("done", 24)
    for stream in streams:
        assert [f["replayed_from"] for f in copies(r, stream)] == originals[stream]
