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
