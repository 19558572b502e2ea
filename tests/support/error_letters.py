"""Dead letters written by the engine's own dead-letter path (``queue_dead_letter``, the
settler's call), with real tracebacks: the shapes the Errors page groups."""

from __future__ import annotations

import asyncio
import contextlib
import json
import textwrap
import threading
from collections.abc import Sequence

import redis
import redis.asyncio as aioredis

from workers.core.storable import describe
from workers.redis.deadletter import DeadLetter, queue_dead_letter

STREAM = "streamdesk:events"
GROUP = "agents"


def traceback_text(source: str, file: str = "/srv/app/shop/agents.py") -> str:
    """The error text a dead letter keeps for ``source``'s ``handler()`` raising."""
    namespace: dict[str, object] = {}
    exec(compile(textwrap.dedent(source), file, "exec"), namespace)
    try:
        namespace["handler"]()  # type: ignore[operator]
    except Exception as exc:
        return describe(exc)
    raise AssertionError("handler did not raise")


def order_missing(order: object, padding: int = 0) -> str:
    """A KeyError naming an order: one group whatever the order and the line."""
    return traceback_text(
        "\n" * padding + f"def handler():\n    raise KeyError('order {order!s} not found')\n"
    )


def card_declined(card: int) -> str:
    return traceback_text(f"def handler():\n    raise ValueError('card {card} declined')\n")


def letter(n: int, error: str, kind: str = "shop.order", stream: str = STREAM) -> DeadLetter:
    event = json.dumps({"type": kind, "source": "test", "id": f"e{n}", "data": {"n": n}})
    return DeadLetter(
        event=event, stream=stream, group=GROUP, entry_id=f"{n + 1}-0", deliveries=5,
        reason="max-deliveries", error=error, dead_at="2026-12-06T00:00:00+00:00", by="w1",
    )  # fmt: skip


def write_letters(redis_url: str, letters: Sequence[DeadLetter]) -> list[str]:
    """Each letter through ``queue_dead_letter`` (in one pipeline); returns the dead ids,
    in order (read back: the script returns the XACK's reply)."""
    sync = redis.Redis.from_url(redis_url, decode_responses=True)
    for stream in {x.stream for x in letters}:
        with contextlib.suppress(redis.ResponseError):  # the group exists
            sync.xgroup_create(stream, GROUP, id="$", mkstream=True)
    before = {s: _last_dead(sync, s) for s in {x.stream for x in letters}}
    # In a thread of its own: Playwright's sync API keeps an event loop running in this one.
    writer = threading.Thread(target=asyncio.run, args=(_write(redis_url, letters),))
    writer.start()
    writer.join()
    ids: list[str] = []
    for stream, last in before.items():
        ids += [str(i) for i, _ in sync.xrange(f"{stream}:dead", f"({last}" if last else "-")]
    sync.close()
    return ids


def _last_dead(r: redis.Redis, stream: str) -> str:
    rows = r.xrevrange(f"{stream}:dead", count=1)
    return str(rows[0][0]) if rows else ""


async def _write(redis_url: str, letters: Sequence[DeadLetter]) -> None:
    client = aioredis.Redis.from_url(redis_url, decode_responses=True)
    try:
        async with client.pipeline(transaction=False) as pipe:
            for x in letters:
                queue_dead_letter(pipe, x)
            await pipe.execute()
    finally:
        await client.aclose()
