"""The replay job's work: read the range page by page, copy what the agent should run.

Each page is read after the job's cursor (``<stream index>:<entry id>``: a partitioned
stream's partitions one after another), keeps the events the replay takes (``takes``), and
``apply`` copies them into the stream they came from, pipelined: the original event with
``for=<the agent's group>`` (every other group acks it unread), ``replayed_from=<its entry
id>`` and, forced, ``replay=<the job's salt>`` (a new run, linked to the one it repeats).
Without force, a page's events whose run already finished are skipped, not copied.

The cursor is saved after each page (``workers/operations/jobs.py``): a job stopped or
cancelled between pages copies nothing twice and misses nothing when resumed. A runner that
dies between a page's copies and its save copies that page again when the job is resumed:
the gate runs each of those once (the same run hash, forced or not).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, cast

import redis

from workers.core.errors import EventError
from workers.core.events import decode_envelope, event_hash
from workers.core.fanout import REPLAY_FIELD, TARGET_FIELD, run_hash
from workers.core.keys import EVENT_FIELD, Keys
from workers.models import BulkJob
from workers.operations.actions import ActionResult
from workers.operations.batches import Page
from workers.replay.done import done_among
from workers.replay.plan import Replay

# The copy's field naming the entry it copies (provenance: the event page links them).
REPLAYED_FROM_FIELD = "replayed_from"


@dataclass(frozen=True, slots=True)
class Taken:
    raw: str
    event_hash: str  # the event's own hash


def takes(fields: dict[str, str], replay: Replay) -> Taken | None:
    """The entry's event if the replay copies it: an event as published (an entry meant for
    one group is a copy of one: a redrive, an answered wait, a replay) of the agent's type,
    and of the subject asked for. As ``lua/count.lua`` counts."""
    raw = fields.get(EVENT_FIELD)
    if raw is None or TARGET_FIELD in fields:
        return None
    if replay.plain and not spelled(raw, replay.event_type):  # cannot match: no decoding
        return None
    try:
        envelope = decode_envelope(raw)
    except EventError:
        return None
    if envelope.type != replay.event_type:
        return None
    if replay.subject and envelope.subject != replay.subject:
        return None
    return Taken(raw, event_hash(envelope))


def spelled(raw: str, text: str) -> bool:
    """Whether plain ``text`` is in ``raw``, as any encoder writes it (``/`` or ``\\/``)."""
    return text in raw or ("/" in text and text.replace("/", "\\/") in raw)


def parse_cursor(cursor: str) -> tuple[int, str]:
    """``(stream index, last entry id read there)``; "" for none read yet."""
    index, _, entry_id = cursor.partition(":")
    return (int(index), entry_id) if index else (0, "")


class ReplayWork:
    """One replay job's pages (``workers.operations.batches.JobWork``)."""

    def __init__(self, job: BulkJob, client: redis.Redis, keys: Keys, batch: int) -> None:
        self.job = job
        self.client = client
        self.replay = Replay.from_params(job.params["filter"])
        self.batch = max(1, batch)
        # The page just read, for ``apply``: its stream and the events it took, by entry id.
        self._stream = ""
        self._taken: dict[str, Taken] = {}

    def page(self, after: str) -> Page:
        index, last_read = parse_cursor(after)
        streams = self.replay.streams
        if index >= len(streams):
            return Page([], after, True)
        self._stream = streams[index]
        start = f"({last_read}" if last_read else self.replay.start
        rows = cast(
            list[tuple[str, dict[str, str]]],
            self.client.xrange(self._stream, start, self.replay.end_of(index), self.batch),
        )
        self._taken = {}
        for entry_id, fields in rows:
            taken = takes(fields, self.replay)
            if taken is not None:
                self._taken[str(entry_id)] = taken
        if len(rows) < self.batch:  # this stream's range is done: the next one's start
            return Page(list(self._taken), f"{index + 1}:", index + 1 >= len(streams))
        return Page(list(self._taken), f"{index}:{rows[-1][0]}", False)

    def apply(self, ids: list[str]) -> ActionResult:
        replay = self.replay
        skipped: set[str] = set()
        if not replay.force:
            runs = {i: run_hash(self._taken[i].event_hash, replay.run_name) for i in ids}
            finished = done_among(list(runs.values()))
            skipped = {i for i, h in runs.items() if h in finished}
        copied = [i for i in ids if i not in skipped]
        with self.client.pipeline(transaction=False) as pipe:
            for entry_id in copied:
                pipe.xadd(self._stream, self._copy(entry_id))
            new_ids = [str(i) for i in pipe.execute()]
        return ActionResult(copied, [i for i in ids if i in skipped], new_ids)

    def _copy(self, entry_id: str) -> dict[Any, Any]:
        fields: dict[Any, Any] = {
            EVENT_FIELD: self._taken[entry_id].raw,
            TARGET_FIELD: self.replay.group,
            REPLAYED_FROM_FIELD: entry_id,
        }
        if self.replay.force:  # the job's id names it; its salt keeps it unlike any other's
            fields[REPLAY_FIELD] = f"{self.job.pk}.{self.replay.salt}"
        return fields
