"""A replay's preview: what the range holds, what it would run, how far back it reaches.

Read only. Entries are counted in Redis (``counting.py``, a million in a few seconds), what the
agent already did in the database (``done.py``): nothing walks the range in Python.
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass
from typing import Any

import redis

from workers.replay.bounds import FIRST, as_time, id_order
from workers.replay.counting import Reach, count_range, reach, resolved_end
from workers.replay.done import done_in_range
from workers.replay.plan import Replay


@dataclass(frozen=True, slots=True)
class ReplayPreview:
    in_range: int  # entries between the bounds, every kind
    matching: int  # of them, events of the agent's type (and subject) as published
    already_done: int  # of those, events the agent already ran (by the database)
    would_run: int  # what the replay would copy: all matching when forced
    force: bool
    reach: tuple[Reach, ...]  # each stream: how far back it reaches, what was trimmed
    ends: tuple[str, ...]  # each stream's end of the range, resolved (``+``: its newest id)
    took_s: float
    db_s: float = 0.0  # of which, counting what the agent did in the database

    @property
    def trimmed(self) -> int:
        return sum(r.trimmed for r in self.reach)

    def oldest(self) -> str:
        """The oldest entry replay can read, as id and time ("" for empty streams)."""
        firsts = [r.first_id for r in self.reach if r.first_id]
        if not firsts:
            return ""
        first = min(firsts, key=id_order)
        return f"{first} ({as_time(first)})"

    def summary(self) -> str:
        done = "a forced replay runs them all again" if self.force else "it skips those"
        text = (
            f"{self.in_range} entries in range, {self.matching} of the agent's events, "
            f"{self.already_done} already done ({done}): {self.would_run} would run"
        )
        if self.oldest():
            text += f"; the stream reaches back to {self.oldest()}"
        if self.trimmed:
            text += f", {self.trimmed} older entries trimmed"
        return text

    def as_dict(self) -> dict[str, Any]:
        values = asdict(self)
        values["oldest"], values["trimmed"] = self.oldest(), self.trimmed
        return values


def preview(client: redis.Redis, replay: Replay) -> ReplayPreview:
    """Count the replay's range on each of its streams."""
    began = time.monotonic()
    in_range = matching = done = 0
    db_s = 0.0
    reaches, ends = [], []
    for stream in replay.streams:
        found = reach(client, stream)
        end = resolved_end(replay.end, found)
        reaches.append(found)
        ends.append(end)
        if not found.first_id:
            continue
        count = count_range(
            client, stream, replay.start, end, replay.event_type, replay.subject, replay.plain
        )
        in_range, matching = in_range + count.read, matching + count.taken
        if count.taken:
            # Runs of trimmed entries cannot be replayed: the range starts at the oldest.
            start = found.first_id
            if replay.start != FIRST and id_order(replay.start) > id_order(start):
                start = replay.start
            asked = time.monotonic()
            done += min(count.taken, done_in_range(replay, stream, start, end))
            db_s += time.monotonic() - asked
    would_run = matching if replay.force else max(0, matching - done)
    took_s = time.monotonic() - began
    return ReplayPreview(
        in_range,
        matching,
        done,
        would_run,
        replay.force,
        tuple(reaches),
        tuple(ends),
        took_s,
        db_s,
    )
