"""Previewing a redrive: how many dead letters a filter matches, and how many of those the
gate would skip because their event already ran. Read only, and bounded."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

import redis

from workers.core.events import stored_hash
from workers.core.keys import EVENT_FIELD, Keys
from workers.gate import GateState, queue_gate_states
from workers.operations import actions, inputs
from workers.operations.actions import DeadFilter
from workers.store.runs import DjangoRunStore

# Dead letters read at most per preview. Each letter read costs a JSON decode and hash (about
# 0.1 ms); 200,000 took 9-24 s per GET and six at once slowed every page, so a preview reads
# 10,000 (a fraction of a second) and says "at least" when there are more.
PREVIEW_MAX_SCANNED = 10_000
PAGE = 1000


@dataclass(frozen=True, slots=True)
class Preview:
    matching: int
    already_done: int  # of the matching: events that already ran (a redrive is a gate hit)
    scanned: int
    complete: bool  # False: stopped after ``scanned`` letters, the counts are lower bounds

    def summary(self) -> str:
        text = f"{self.matching} dead letters match, {self.already_done} of them already done"
        return text if self.complete else f"at least {text} (in the first {self.scanned} read)"

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def preview_redrive(
    stream: str,
    filter: DeadFilter,
    *,
    client: redis.Redis,
    keys: Keys,
    max_scanned: int = PREVIEW_MAX_SCANNED,
) -> Preview:
    """Count what ``filter`` matches in ``<stream>:dead``, reading at most ``max_scanned``.
    Raises ``InvalidAction`` for a window no stream id can fall in (before 1970)."""
    inputs.dead_filter(filter)
    # The time window narrows the range read; type and reason are checked here, so every
    # letter read is counted as scanned.
    window = DeadFilter(since_ms=filter.since_ms, until_ms=filter.until_ms)
    after: str | None = None
    matching = done = scanned = 0
    while scanned < max_scanned:
        count = min(PAGE, max_scanned - scanned)
        letters, after = actions.scan_dead(client, stream, window, after, count)
        scanned += len(letters)
        raws = [fields.get(EVENT_FIELD, "") for i, fields in letters if filter.matches(i, fields)]
        matching += len(raws)
        done += already_done(client, keys, raws, stream)
        if after is None:
            return Preview(matching, done, scanned, complete=True)
    return Preview(matching, done, scanned, complete=False)


def already_done(client: redis.Redis, keys: Keys, raw_events: list[str], stream: str = "") -> int:
    """How many of these events ran: by the gate, or by the database (the authority, which
    remembers when the gate's record has expired). Each event is decoded and hashed once."""
    hashes = [h for h in (stored_hash(raw) for raw in raw_events) if h]
    if not hashes:
        return 0
    with client.pipeline(transaction=False) as pipe:
        queue_gate_states(pipe, keys, hashes, stream)
        states = pipe.execute()
    by_db = DjangoRunStore().done_among(
        [h for h, state in zip(hashes, states, strict=True) if state != GateState.DONE]
    )
    return sum(
        1 for h, state in zip(hashes, states, strict=True) if state == GateState.DONE or h in by_db
    )
