"""Previewing a redrive: how many dead letters a filter matches, and how many of those the
gate would skip because their event already ran. Read only, and bounded."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

import redis

from workers.core.events import stored_hash
from workers.core.fanout import run_hash
from workers.core.keys import DEFAULT_GROUP, EVENT_FIELD, Keys
from workers.gate import GateState, queue_gate_states
from workers.operations import actions, inputs
from workers.operations.actions import DeadFilter, agent_in
from workers.store.runs import DjangoRunStore

# Dead letters read at most per preview. Each letter read costs a JSON decode and hash (about
# 0.1 ms); 200,000 took 9-24 s per GET and six at once slowed every page, so a preview reads
# 10,000 (a fraction of a second) and says "at least" when there are more.
PREVIEW_MAX_SCANNED = 10_000
PAGE = 1000
# Reasons of letters no agent had (the home group wrote them): a redrive sends them to every
# group, not to the letter's (workers/operations/lua/redrive.lua).
UNTARGETED = ("unknown-type", "decode-error")


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
    home: str = DEFAULT_GROUP,
    max_scanned: int = PREVIEW_MAX_SCANNED,
) -> Preview:
    """Count what ``filter`` matches in ``<stream>:dead``, reading at most ``max_scanned``;
    "already done" by the run of each letter's group's agent (``home``: the home group).
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
        runs = [letter_run(fields, home) for i, fields in letters if filter.matches(i, fields)]
        matching += len(runs)
        done += already_done(client, keys, runs, stream)
        if after is None:
            return Preview(matching, done, scanned, complete=True)
    return Preview(matching, done, scanned, complete=False)


def letter_run(fields: dict[str, str], home: str) -> tuple[str, str]:
    """A dead letter's raw event and the agent a redrive of it runs: its group's (a named
    agent's letter goes back to that agent alone), "" for the home group's agents."""
    agent = "" if fields.get("reason") in UNTARGETED else agent_in(home, fields.get("group", ""))
    return fields.get(EVENT_FIELD, ""), agent


def already_done(
    client: redis.Redis, keys: Keys, runs: list[tuple[str, str]], stream: str = ""
) -> int:
    """How many of these runs (``(raw event, agent)`` pairs) ran: by the gate, or by the
    database (the authority, which remembers when the gate's record has expired). Each
    event is decoded and hashed once."""
    events = ((stored_hash(raw), agent) for raw, agent in runs)
    hashes = [run_hash(h, agent) for h, agent in events if h]
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
