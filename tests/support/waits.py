"""Real waits for tests, written as the engine writes them (``workers.waits.Waits``): a run
waiting for an event or sleeping, and the engine's answer of a published event."""

from __future__ import annotations

import asyncio
import hashlib
import json
from typing import Any

from workers.core.events import decode_envelope
from workers.core.keys import DEFAULT_STREAM, Keys
from workers.redis.connection import aconnect
from workers.waits import Arrival, WaitFor, Waits

RUN_TYPE = "refund.requested"
ANSWER_TYPE = "refund.answered"


def run_hash(n: int) -> str:
    """A made-up run's event hash (64 hex digits, as the console and actions expect)."""
    return hashlib.sha256(f"run-{n}".encode()).hexdigest()


async def _with_waits(redis_url: str, stream: str, call: Any) -> Any:
    client = await aconnect(redis_url)  # a cluster node gives a cluster client
    try:
        return await call(Waits(client, Keys(), stream, "agents"))
    finally:
        await client.aclose()


def wait_for(
    redis_url: str,
    event_hash: str,
    match: dict[str, Any] | None = None,
    *,
    stream: str = DEFAULT_STREAM,
    event_type: str = ANSWER_TYPE,
    timeout_ms: int = 600_000,
    step: str = "wait#1",
) -> str:
    """Run ``event_hash`` waits for an event of ``event_type`` matching ``match``."""
    envelope = json.dumps({"type": RUN_TYPE, "id": event_hash, "data": {"order_id": 42}})
    on = WaitFor("event", step, event_type, match or {}, delay_ms=timeout_ms)
    state = asyncio.run(
        _with_waits(redis_url, stream, lambda w: w.wait(event_hash, RUN_TYPE, envelope, on))
    )
    return str(state.state)


def sleep(redis_url: str, event_hash: str, *, stream: str = DEFAULT_STREAM) -> str:
    envelope = json.dumps({"type": RUN_TYPE, "id": event_hash, "data": {}})
    on = WaitFor("sleep", "sleep#1", delay_ms=600_000)
    state = asyncio.run(
        _with_waits(redis_url, stream, lambda w: w.wait(event_hash, RUN_TYPE, envelope, on))
    )
    return str(state.state)


def engine_reads(redis_url: str, entry_id: str, *, stream: str = DEFAULT_STREAM) -> list[str]:
    """What a worker does with the entry when it reads it: the waits it answers (their runs'
    event hashes)."""

    async def read(w: Waits) -> list[str]:
        [(_, fields)] = await w.client.xrange(stream, entry_id, entry_id)
        raw = fields["event"]
        arrival: Arrival = (decode_envelope(raw), entry_id, raw)
        answered = await w.answer_batch([arrival])
        return [h for hashes in answered.resumed.values() for h in hashes]

    return list(asyncio.run(_with_waits(redis_url, stream, read)))
