"""The preview's count in Redis (workers/replay/lua/count.lua) takes exactly the entries the
job copies (workers/replay/copying.py ``takes``), however the JSON is spelled."""

from __future__ import annotations

import json

import pytest
import redis

from tests.support.engine import STREAM
from tests.support.replay import Ticket
from workers.core.registry import Registry
from workers.replay import plan
from workers.replay.copying import takes
from workers.replay.counting import count_range

TYPE = "ticket.created+v2"  # regex-magic characters: matched as text, not as a pattern


def spellings() -> list[dict[str, str]]:
    """Entries as different producers write them, matching or not, and copies."""
    event = {"type": TYPE, "source": "t", "id": "1", "subject": "acme/api#7", "data": {"n": 1}}
    other = {**event, "type": "ticket.closed", "data": {"type": TYPE, "subject": "acme/api#7"}}
    return [
        {"event": json.dumps(event)},  # Python's default: spaces after ':' and ','
        {"event": json.dumps(event, separators=(",", ":"))},  # compact
        {"event": json.dumps(event).replace("/", "\\/")},  # an encoder escaping '/'
        {"event": json.dumps({**event, "subject": "acme/api#8"})},
        {"event": json.dumps({**event, "type": "ticket.created+v2x"})},
        {"event": json.dumps(other)},  # the type and subject nested in data only
        {"event": json.dumps({**event, "data": {"type": "x"}})},  # "type" twice: decoded
        {"event": json.dumps({**event, "data": {"n": 1, "note": "type"}})},
        {"event": '{"type": "ticket.created+v2", "type": "other", "data": {}}'},  # last wins
        {"event": json.dumps(event), "for": "agents:triage"},  # a copy for one group
        {"event": "{not json"},
        {"data": "no event field"},
    ]


@pytest.mark.parametrize("subject", ["", "acme/api#7", "acme/api#8", "nobody"])
def test_count_takes_what_the_job_copies(r: redis.Redis, subject: str) -> None:
    registry = Registry()
    registry.agent(TYPE, schema=Ticket, name="triage")(_agent)
    for fields in spellings():
        r.xadd(STREAM, fields)  # type: ignore[arg-type]
    replay = plan(registry, "agents", "triage", [STREAM], subject=subject)
    assert replay.plain
    copied = sum(1 for _, f in r.xrange(STREAM) if takes(f, replay) is not None)
    for per_call in (1, 3, 1000):
        counted = count_range(r, STREAM, "-", "+", TYPE, subject, True, per_call)
        assert (counted.read, counted.taken) == (len(spellings()), copied)
        # Without the searches (plain off), every entry decoded: the same count.
        decoded = count_range(r, STREAM, "-", "+", TYPE, subject, False, per_call)
        assert decoded.taken == copied
    assert copied == {"": 6, "acme/api#7": 5, "acme/api#8": 1, "nobody": 0}[subject]


async def _agent(event: object, ctx: object) -> None:
    return None
