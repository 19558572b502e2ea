"""The Errors page's reads: every stream's error groups (one HGETALL per stream, never the
dead streams themselves) and one group's letters, a page at a time (docs/console.md#errors)."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

import redis

from console.reads.browse import DeadRow, dead_row
from workers.core.keys import Keys, dead_stream
from workers.models import AgentRun, RunStatus
from workers.redis.deadletter import letter_fingerprint
from workers.redis.error_groups import (
    ErrorGroup,
    member_ids,
    read_group,
    read_groups,
    unfingerprinted,
)
from workers.redis.stats import known_streams

MEMBERS_PAGE = 50
# Failed runs (failing, not yet dead) read for their groups, the newest first: a bounded
# window, as nothing stores their fingerprint (the index on status and time serves it).
FAILED_WINDOW = 1_000
FAILED_GROUPS_SHOWN = 20
# Groups drawn per page, the largest first: every group is read (one hash per stream), but
# a thousand rows of buttons would cost the template most of a second to draw.
GROUPS_PAGE = 50


@dataclass(frozen=True, slots=True)
class ErrorsOverview:
    groups: list[ErrorGroup]  # this page's
    total: int  # groups in all
    letters: int  # dead letters in every group
    ungrouped: int  # letters without a fingerprint yet (``manage.py errors --backfill``)
    offset: int

    @property
    def has_next(self) -> bool:
        return self.offset + GROUPS_PAGE < self.total

    @property
    def last_shown(self) -> int:
        return self.offset + len(self.groups)

    @property
    def next_offset(self) -> int:
        return self.offset + GROUPS_PAGE

    @property
    def previous_offset(self) -> int:
        return max(0, self.offset - GROUPS_PAGE)


@dataclass(frozen=True, slots=True)
class Member:
    id: str
    row: DeadRow | None  # None: the letter is gone (redriven or purged meanwhile)


@dataclass(frozen=True, slots=True)
class GroupDetail:
    group: ErrorGroup
    members: list[Member]
    offset: int
    has_next: bool

    @property
    def next_offset(self) -> int:
        return self.offset + MEMBERS_PAGE

    @property
    def previous_offset(self) -> int:
        return max(0, self.offset - MEMBERS_PAGE)


def overview(client: redis.Redis, keys: Keys, offset: int = 0) -> ErrorsOverview:
    streams = known_streams(client, keys)
    groups = read_groups(client, keys, streams)
    shown = groups[offset : offset + GROUPS_PAGE]
    letters = sum(g.count for g in groups)
    missing = unfingerprinted(client, streams, groups)
    return ErrorsOverview(shown, len(groups), letters, missing, offset)


def detail(
    client: redis.Redis, keys: Keys, stream: str, fingerprint: str, offset: int
) -> GroupDetail | None:
    """One group and a page of its letters, newest first; None if it has none."""
    group = read_group(client, keys, stream, fingerprint)
    if group is None:
        return None
    ids = member_ids(client, keys, stream, fingerprint, offset, offset + MEMBERS_PAGE)
    with client.pipeline(transaction=False) as pipe:
        for dead_id in ids[:MEMBERS_PAGE]:
            pipe.xrange(dead_stream(stream), dead_id, dead_id, count=1)
        replies = pipe.execute()
    members = [
        Member(i, dead_row(i, dict(rows[0][1])) if rows else None)
        for i, rows in zip(ids[:MEMBERS_PAGE], replies, strict=False)
    ]
    return GroupDetail(group, members, offset, len(ids) > MEMBERS_PAGE)


@dataclass(slots=True)
class FailingGroup:
    """Failed runs (retrying, not yet dead-lettered) of one fingerprint, in the window read."""

    fingerprint: str
    kind: str
    message: str
    frame: str
    error: str  # the newest run's last line
    event_hash: str  # ... and its event
    count: int = 0
    first: datetime | None = None
    last: datetime | None = None
    # A plain dict: a template's ``types.items`` on a Counter would read the key "items".
    types: dict[str, int] = field(default_factory=dict)
    streams: set[str] = field(default_factory=set)


@dataclass(frozen=True, slots=True)
class Failing:
    groups: list[FailingGroup]
    runs: int  # failed runs read (at most FAILED_WINDOW)
    window: int


def failing(window: int = FAILED_WINDOW) -> Failing:
    """The newest ``window`` failed runs grouped by the fingerprint of their error, the
    largest group first (``FAILED_GROUPS_SHOWN`` of them)."""
    rows = (
        AgentRun.objects.filter(status=RunStatus.FAILED)
        .order_by("-created_at")
        .values_list("event_hash", "event_type", "stream", "error", "created_at")[:window]
    )
    groups: dict[str, FailingGroup] = {}
    n = 0
    for event_hash, event_type, stream, error, at in rows:
        n += 1
        found = letter_fingerprint(error, "failed")
        group = groups.get(found.digest)
        if group is None:
            last_line = error.rstrip().rsplit("\n", 1)[-1].strip()
            group = groups[found.digest] = FailingGroup(
                found.digest, found.kind, found.message, found.frame, last_line, event_hash
            )
            group.last = at
        group.count += 1
        group.first = at
        group.types[event_type] = group.types.get(event_type, 0) + 1
        group.streams.add(stream)
    ranked = sorted(groups.values(), key=lambda g: -g.count)
    return Failing(ranked[:FAILED_GROUPS_SHOWN], n, window)
