"""The bulk-actions benchmark's data: dead letters, an orphaned consumer's pending entries,
and a steady producer of new events.

Everything is shaped as the engine writes it (``demo.echo`` envelopes with distinct ids,
dead letters with ``workers.redis.deadletter.DeadLetter``'s fields in its order), but built by Lua
scripts on the server, 10,000 entries a call: 100,000 of each take a second or two. Only
for the benchmark's private server.

Run as ``python -m bench.actions.load URL RATE``, it is the producer: it XADDs ``demo.echo``
events to ``streamdesk:events`` at RATE a second (a batch every 20 ms) until SIGTERM.
"""

from __future__ import annotations

import json
import signal
import sys
import time
from dataclasses import dataclass
from typing import Any

import redis

from workers.core.events import decode_envelope
from workers.core.keys import DEFAULT_GROUP, DEFAULT_STREAM, EVENT_FIELD, dead_stream
from workers.redis.deadletter import DeadLetter

STREAM = DEFAULT_STREAM
GROUP = DEFAULT_GROUP
GONE = "gone"  # the orphaned consumer holding the pending entries
RESCUER = "rescuer"  # where claim-all moves them
CHUNK = 10_000  # entries per Lua call
ECHO_TYPE = "demo.echo"
PRODUCE_TICK_S = 0.02
# What the engine writes as a dead letter's error (workers.engine.settle: the agent kept failing).
ERROR = "Traceback (most recent call last):\n  ...\nValueError: echo %d: upstream answered 503"

# KEYS: stream. ARGV: id prefix, first n, end n (exclusive). The same JSON as envelope().
XADD_ECHO = """
local template = '{"type":"demo.echo","source":"bench","id":"' .. ARGV[1] .. '-%d",'
  .. '"data":{"n":%d}}'
for n = tonumber(ARGV[2]), tonumber(ARGV[3]) - 1 do
  redis.call('XADD', KEYS[1], '*', 'event', string.format(template, n, n))
end
return 1
"""

# KEYS: dead stream. ARGV: first n, end n, stream, group, dead_at, error template, base ms.
# The fields of workers.redis.deadletter.DeadLetter, in its order (checked against it below).
XADD_DEAD = """
local template = '{"type":"demo.echo","source":"bench","id":"dead-%d","data":{"n":%d}}'
for n = tonumber(ARGV[1]), tonumber(ARGV[2]) - 1 do
  redis.call('XADD', KEYS[1], '*', 'event', string.format(template, n, n),
    'stream', ARGV[3], 'group', ARGV[4], 'entry_id', ARGV[7] .. '-' .. n, 'deliveries', '5',
    'reason', 'max-deliveries', 'error', string.format(ARGV[6], n), 'dead_at', ARGV[5],
    'by', 'bench-host-' .. (n % 4 + 1))
end
return 1
"""

# KEYS: stream. ARGV: group, consumer, count. One XREADGROUP, nothing acked: how many read.
READ_CHUNK = """
local reply = redis.call('XREADGROUP', 'GROUP', ARGV[1], ARGV[2], 'COUNT', ARGV[3],
  'STREAMS', KEYS[1], '>')
if not reply then return 0 end
return #reply[1][2]
"""


@dataclass(frozen=True, slots=True)
class Built:
    dead: int
    pending: int
    seconds: float


def envelope(prefix: str, n: int) -> str:
    """What the Lua templates write: a ``demo.echo`` event with a distinct id."""
    event = {"type": ECHO_TYPE, "source": "bench", "id": f"{prefix}-{n}", "data": {"n": n}}
    return json.dumps(event, separators=(",", ":"))


def dead_letter(n: int, dead_at: str, base_ms: int) -> DeadLetter:
    return DeadLetter(
        event=envelope("dead", n),
        stream=STREAM,
        group=GROUP,
        entry_id=f"{base_ms}-{n}",
        deliveries=5,
        reason="max-deliveries",
        error=ERROR % n,
        dead_at=dead_at,
        by=f"bench-host-{n % 4 + 1}",
    )


def add_dead(client: redis.Redis, count: int) -> None:
    """``count`` dead letters in ``streamdesk:events:dead``, as the engine writes them."""
    dead_at = time.strftime("%Y-%m-%dT%H:%M:%S+00:00", time.gmtime())
    base_ms = int(time.time() * 1000) - 3_600_000
    add = client.register_script(XADD_DEAD)
    for start in range(0, count, CHUNK):
        end = min(start + CHUNK, count)
        add(keys=[dead_stream(STREAM)], args=[start, end, STREAM, GROUP, dead_at, ERROR, base_ms])
    first = client.xrange(dead_stream(STREAM), count=1)[0][1]
    want = dead_letter(0, dead_at, base_ms).fields()
    if list(first.items()) != list(want.items()):
        raise RuntimeError(f"dead letters differ from DeadLetter: {first} != {want}")


def add_events(client: redis.Redis, prefix: str, start: int, end: int) -> None:
    add = client.register_script(XADD_ECHO)
    for at in range(start, end, CHUNK):
        add(keys=[STREAM], args=[prefix, at, min(at + CHUNK, end)])


def add_pending(client: redis.Redis, count: int) -> None:
    """``count`` events read by consumer ``gone`` of group ``agents`` and never acked."""
    add_events(client, "pending", 0, count)
    client.xgroup_create(STREAM, GROUP, id="0", mkstream=True)
    read = client.register_script(READ_CHUNK)
    got = 0
    while got < count:
        n = int(read(keys=[STREAM], args=[GROUP, GONE, min(CHUNK, count - got)]))
        if n == 0:
            break
        got += n
    first = client.xrange(STREAM, count=1)[0][1][EVENT_FIELD]
    if first != envelope("pending", 0) or decode_envelope(first).type != ECHO_TYPE:
        raise RuntimeError(f"the stream's events differ from envelope(): {first}")


def build(client: redis.Redis, dead: int, pending: int) -> Built:
    """An empty database, then ``dead`` dead letters and ``pending`` entries of ``gone``."""
    began = time.perf_counter()
    client.flushdb()
    if dead:
        add_dead(client, dead)
    if pending:
        add_pending(client, pending)
    check(client, dead, pending)
    return Built(dead, pending, time.perf_counter() - began)


def check(client: redis.Redis, dead: int, pending: int) -> None:
    got_dead = client.xlen(dead_stream(STREAM))
    got_pending = consumer_pending(client, GONE) if pending else 0
    if (got_dead, got_pending) != (dead, pending):
        raise RuntimeError(f"built {got_dead} dead / {got_pending} pending, not {dead}/{pending}")


def consumer_pending(client: redis.Redis, consumer: str) -> int:
    summary: Any = client.xpending(STREAM, GROUP)
    for row in summary.get("consumers") or []:
        if row["name"] == consumer:
            return int(row["pending"])
    return 0


def produce(url: str, rate: float) -> int:
    """XADD ``rate`` events a second in small batches, on schedule, until SIGTERM."""
    client = redis.Redis.from_url(url, decode_responses=True)
    add = client.register_script(XADD_ECHO)
    stopping = False

    def stop(*_: object) -> None:
        nonlocal stopping
        stopping = True

    signal.signal(signal.SIGTERM, stop)
    began, sent = time.monotonic(), 0
    while not stopping:
        due = int((time.monotonic() - began) * rate)
        if due > sent:
            add(keys=[STREAM], args=["live", sent, due])
            sent = due
        time.sleep(PRODUCE_TICK_S)
    client.close()
    print(f"produced {sent} events in {time.monotonic() - began:.1f} s", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(produce(sys.argv[1], float(sys.argv[2])))
