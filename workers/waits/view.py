"""The operators' read side of waits, on a sync client: a stream's waiting runs a page at a
time (newest first), how many there are, and one run's wait by its event hash.

A page costs two round trips whatever the set's size: ZCARD, a ZREVRANGE of the page's
members and the server's TIME (read beside it on a cluster, whose pipelines refuse it), then
one pipeline of HGETALL for those records. The set is never read whole.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, cast

import redis

from workers.core.keys import Keys
from workers.redis.pipelines import queues_time, server_ms

PAGE_SIZE = 50
MAX_PAGE_SIZE = 500


@dataclass(frozen=True, slots=True)
class WaitView:
    """One run's wait as its record says. ``kind`` ``event`` waits for an event of ``type``
    whose fields equal ``match``; ``sleep`` waits for ``until_ms`` only (0: no timeout)."""

    stream: str
    event_hash: str
    state: str
    kind: str
    type: str
    match: dict[str, Any]
    since_ms: int
    until_ms: int
    step: str
    run_type: str
    group: str
    # What a person answering it is asked (``wait_for_event(note=)``, an interrupt's
    # question), "" for none.
    note: str = ""

    @property
    def is_event(self) -> bool:
        return self.kind == "event"

    @property
    def waits_for(self) -> str:
        """``refund.answered where data.order_id=42``, or ``sleep``."""
        if not self.is_event:
            return "sleep"
        if not self.match:
            return self.type
        fields = ", ".join(f"{k}={json.dumps(v)}" for k, v in sorted(self.match.items()))
        return f"{self.type} where {fields}"

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready, for ``manage.py waits --json`` and ``GET /api/waits/``."""
        return {
            "event_hash": self.event_hash,
            "stream": self.stream,
            "group": self.group,
            "run_type": self.run_type,
            "step": self.step,
            "kind": self.kind,
            "type": self.type if self.is_event else None,
            "match": self.match if self.is_event else None,
            "since_ms": self.since_ms,
            "until_ms": self.until_ms or None,
            "note": self.note or None,
        }


@dataclass(frozen=True, slots=True)
class WaitPage:
    stream: str
    waits: list[WaitView]
    total: int
    offset: int
    limit: int
    # The server's clock when the page was read (ms): what since and until compare to.
    at_ms: int = 0

    @property
    def has_next(self) -> bool:
        return self.offset + self.limit < self.total

    @property
    def next_offset(self) -> int:
        return self.offset + self.limit

    @property
    def previous_offset(self) -> int:
        return max(self.offset - self.limit, 0)


def page(
    client: redis.Redis, keys: Keys, stream: str, offset: int = 0, limit: int = PAGE_SIZE
) -> WaitPage:
    """The waiting runs of ``stream`` from ``offset``, newest first. A member whose record
    is gone or no longer waiting (it ended between the two reads) is left out."""
    offset, limit = max(offset, 0), min(max(limit, 1), MAX_PAGE_SIZE)
    with client.pipeline(transaction=False) as pipe:
        pipe.zcard(keys.waiting(stream))
        pipe.zrevrange(keys.waiting(stream), offset, offset + limit - 1)
        timed = queues_time(pipe)
        total, members, *clock = pipe.execute()
    hashes = [_text(m) for m in members]
    found = _records(client, keys, stream, hashes)
    waits = [w for w in found if w is not None and w.state == "waiting"]
    at_ms = server_ms(client, clock[0] if timed else None)
    return WaitPage(stream, waits, int(total), offset, limit, at_ms)


def count(client: redis.Redis, keys: Keys, stream: str) -> int:
    return int(cast(int, client.zcard(keys.waiting(stream))))


def counts(client: redis.Redis, keys: Keys, streams: Sequence[str]) -> dict[str, int]:
    """How many runs wait on each of ``streams`` (one pipeline)."""
    with client.pipeline(transaction=False) as pipe:
        for stream in streams:
            pipe.zcard(keys.waiting(stream))
        replies = pipe.execute()
    return {s: int(n) for s, n in zip(streams, replies, strict=True)}


def one(client: redis.Redis, keys: Keys, stream: str, event_hash: str) -> WaitView | None:
    """The wait of run ``event_hash`` on ``stream``, in any state; None if there is no record
    (never waited, or ended longer ago than a record is kept, ``KEEP_MS``)."""
    return _records(client, keys, stream, [event_hash])[0]


def find(
    client: redis.Redis, keys: Keys, streams: Sequence[str], event_hash: str
) -> WaitView | None:
    """The wait of run ``event_hash`` on whichever of ``streams`` holds it (a partitioned
    stream's partitions): one pipeline, waiting records first."""
    found = [w for w in _records(client, keys, streams, [event_hash] * len(streams)) if w]
    return min(found, key=lambda w: w.state != "waiting", default=None)


def _records(
    client: redis.Redis, keys: Keys, stream: str | Sequence[str], hashes: list[str]
) -> list[WaitView | None]:
    streams = [stream] * len(hashes) if isinstance(stream, str) else list(stream)
    if not hashes:
        return []
    with client.pipeline(transaction=False) as pipe:
        for s, h in zip(streams, hashes, strict=True):
            pipe.hgetall(keys.wait(s, h))
        replies = pipe.execute()
    return [_view(s, h, r) for s, h, r in zip(streams, hashes, replies, strict=True)]


def _view(stream: str, event_hash: str, reply: Any) -> WaitView | None:
    fields = {_text(k): _text(v) for k, v in (reply or {}).items()}
    if "state" not in fields:
        return None
    return WaitView(
        stream=stream,
        event_hash=event_hash,
        state=fields["state"],
        kind=fields.get("kind", ""),
        type=fields.get("type", ""),
        match=_match(fields.get("match", "")),
        since_ms=_int(fields.get("since")),
        until_ms=_int(fields.get("until")),
        step=fields.get("step", ""),
        run_type=fields.get("event_type", ""),
        group=fields.get("group", ""),
        note=fields.get("note", ""),
    )


def _match(text: str) -> dict[str, Any]:
    try:
        value = json.loads(text) if text else {}
    except ValueError:  # written by wait.lua from canonical JSON: not expected
        return {}
    return value if isinstance(value, dict) else {}


def _int(text: str | None) -> int:
    try:
        return int(text or 0)
    except ValueError:
        return 0


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)
