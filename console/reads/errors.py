"""The Errors page's reads: every stream's error groups (one HGETALL per stream, never the
dead streams themselves) and one group's letters, a page at a time (docs/console.md#errors)."""

from __future__ import annotations

from dataclasses import dataclass

import redis

from console.reads.browse import DeadRow, dead_row
from workers.core.keys import Keys, dead_stream
from workers.redis.error_groups import (
    ErrorGroup,
    member_ids,
    read_group,
    read_groups,
    unfingerprinted,
)
from workers.redis.stats import known_streams

MEMBERS_PAGE = 50


@dataclass(frozen=True, slots=True)
class ErrorsOverview:
    groups: list[ErrorGroup]
    letters: int  # dead letters in every group
    ungrouped: int  # letters without a fingerprint yet (``manage.py errors --backfill``)


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


def overview(client: redis.Redis, keys: Keys) -> ErrorsOverview:
    streams = known_streams(client, keys)
    groups = read_groups(client, keys, streams)
    letters = sum(g.count for g in groups)
    return ErrorsOverview(groups, letters, unfingerprinted(client, streams, groups))


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
