"""Health marks and pending-entry states: the rules docs/console.md states, one by one.

A mark is for trouble only. Each test names a situation an operator sees under ordinary
traffic (a retry's backoff, a duplicate waiting on its twin, a deferral) or real trouble (no
worker, a stuck entry) and the mark the console must show for it."""

from __future__ import annotations

from dataclasses import replace

import pytest

from console.live import health
from workers.monitor.sample import ConsumerInfo, GroupInfo, StreamInfo

CLAIM_IDLE_MS = 60_000
NOW = 1_800_000_000_000


def group(
    *,
    pending: int = 0,
    lag: int | None = 0,
    idle_ms: int | None = None,
    due_ms: int | None = None,
    live: bool = True,
    paused_by: str | None = None,
    name: str = "g",
) -> GroupInfo:
    return GroupInfo(
        stream="s",
        name=name,
        consumers=[ConsumerInfo("w1", pending, 10, None, live)],
        pending=pending,
        lag=lag,
        entries_read=0,
        last_delivered_id="0-0",
        oldest_pending_id="1-0" if idle_ms is not None else None,
        oldest_pending_idle_ms=idle_ms,
        oldest_pending_due_ms=due_ms,
        paused_by=paused_by,
    )


def stream(*groups: GroupInfo, exists: bool = True, error: str = "") -> StreamInfo:
    return StreamInfo("s", exists, 10, 10, "1-0", 0, {}, list(groups), error)


def test_a_busy_healthy_group_has_no_mark() -> None:
    assert health.group_health(group(pending=40, lag=500, idle_ms=3_000), CLAIM_IDLE_MS) == (
        health.Health("ok", [])
    )


@pytest.mark.parametrize(
    "idle_ms",
    [
        # A retry 1 s away: the engine set idle = claim idle - backoff.
        CLAIM_IDLE_MS - 1_000,
        # A duplicate waiting on its twin's 30 s lease.
        CLAIM_IDLE_MS - 30_000 + 24_000,
        # Reclaimable for 10 s: the reclaimer is about to take it (a busy worker waits for a
        # free slot first).
        CLAIM_IDLE_MS + 10_000,
    ],
)
def test_entries_held_back_or_about_to_be_reclaimed_are_no_mark(idle_ms: int) -> None:
    assert health.group_health(group(pending=1, idle_ms=idle_ms), CLAIM_IDLE_MS).level == "ok"


def test_an_entry_reclaimable_past_the_grace_and_not_taken_is_stuck() -> None:
    idle = health.stuck_after_ms(CLAIM_IDLE_MS) + 1
    mark = health.group_health(group(pending=1, idle_ms=idle), CLAIM_IDLE_MS)
    assert mark.level == "bad"
    assert mark.reasons == [
        "stuck: the oldest pending entry could be reclaimed 15 s ago and no worker has taken it"
    ]


def test_stuck_grace_grows_with_a_long_claim_idle_time() -> None:
    assert health.stuck_after_ms(60_000) == 75_000
    assert health.stuck_after_ms(600_000) == 750_000


def test_no_live_consumer_with_work_is_bad_and_says_what_waits() -> None:
    mark = health.group_health(group(pending=2, lag=1, live=False), CLAIM_IDLE_MS)
    assert mark == health.Health(
        "bad", ["no live consumer to take 2 pending entries and 1 new entry"]
    )


def test_no_live_consumer_with_unknown_lag_is_bad() -> None:
    mark = health.group_health(group(lag=None, live=False), CLAIM_IDLE_MS)
    assert mark.level == "bad" and "undelivered entries" in mark.reasons[0]


def test_no_live_consumer_and_no_work_is_a_warning() -> None:
    mark = health.group_health(group(live=False), CLAIM_IDLE_MS)
    assert mark == health.Health("warn", ["no live consumer: new events will wait for a worker"])


def test_unknown_lag_alone_is_no_mark() -> None:
    """Redis cannot count lag after deletes: the figure says "unknown", nothing is wrong."""
    assert health.group_health(group(lag=None), CLAIM_IDLE_MS).level == "ok"


def test_paused_is_a_warning_with_who() -> None:
    mark = health.group_health(group(paused_by="alice at 11:23"), CLAIM_IDLE_MS)
    assert mark == health.Health("warn", ["paused by alice at 11:23"])


def test_the_stream_shows_its_groups_marks_and_the_worst_level() -> None:
    ok, bad = group(name="a"), group(name="b", pending=1, lag=0, live=False)
    mark = health.stream_health(stream(ok, bad), CLAIM_IDLE_MS)
    assert mark.level == "bad"
    assert mark.reasons == ["b: no live consumer to take 1 pending entry"]
    one = health.stream_health(stream(bad), CLAIM_IDLE_MS)
    assert one.reasons == health.group_health(bad, CLAIM_IDLE_MS).reasons


def test_a_stream_without_groups_or_not_created_or_unreadable() -> None:
    assert health.stream_health(stream(), CLAIM_IDLE_MS).level == "warn"
    assert health.stream_health(stream(exists=False), CLAIM_IDLE_MS).level == "warn"
    unreadable = health.stream_health(stream(group(), error="cannot be read: x"), CLAIM_IDLE_MS)
    assert unreadable.level == "bad"


def test_a_retry_with_its_due_time_is_waiting() -> None:
    # Written 2 s ago: retry in 5 s, so idle was set to 55 s and is now 57 s.
    due = NOW + 3_000
    state = health.pending_state(57_000, due, NOW, CLAIM_IDLE_MS)
    assert state == health.PendingState("waiting", 57_000, due, 3_000)


def test_a_long_deferral_held_by_its_worker_is_waiting() -> None:
    # A rate budget's token 10 min away: the holder keeps idle near 0, reclaimable in < 60 s.
    state = health.pending_state(5_000, NOW + 600_000, NOW, CLAIM_IDLE_MS)
    assert state.kind == "waiting"


def test_a_due_time_the_idle_time_no_longer_agrees_with_is_not_believed() -> None:
    # "Retry now" set idle past the claim idle time: reclaimable now, not at the due time.
    assert health.pending_state(3_600_000, NOW + 20_000, NOW, CLAIM_IDLE_MS).kind == "stuck"
    # Claimed to another consumer (idle 0): reclaimable in 60 s, after the 20 s due time.
    assert health.pending_state(0, NOW + 20_000, NOW, CLAIM_IDLE_MS).kind == "idle"


def test_a_past_due_time_is_not_waiting() -> None:
    assert health.pending_state(61_000, NOW - 1_000, NOW, CLAIM_IDLE_MS).kind == "reclaimable"
    assert health.pending_state(3_000, None, NOW, CLAIM_IDLE_MS).kind == "idle"


def test_a_retry_just_due_says_when_it_was_due_not_its_idle_time() -> None:
    # Held back until 1 s ago, not reclaimed yet: "retry due at", not "idle 61 s".
    state = health.pending_state(61_000, NOW - 1_000, NOW, CLAIM_IDLE_MS)
    assert state == health.PendingState("reclaimable", 61_000, retry_due_ms=NOW - 1_000)
    # Retried now by an operator long after its due time: the idle time says so, no due time.
    late = health.pending_state(65_000, NOW - 30_000, NOW, CLAIM_IDLE_MS)
    assert late.kind == "reclaimable" and late.retry_due_ms is None


def test_oldest_pending_reads_the_group() -> None:
    g = group(pending=1, idle_ms=57_000, due_ms=NOW + 3_000)
    assert health.oldest_pending(g, NOW, CLAIM_IDLE_MS) == health.PendingState(
        "waiting", 57_000, NOW + 3_000, 3_000
    )
    assert (
        health.oldest_pending(replace(g, oldest_pending_idle_ms=None), NOW, CLAIM_IDLE_MS) is None
    )
