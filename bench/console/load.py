"""The console benchmark's data set: a stream, a group with pending entries, dead letters.

Everything is written the way the engine writes it (same keys, same field names, same
dead-letter shape), but in bulk: XADDs and XREADGROUP COUNT 10000 + XACK run in Lua scripts,
10,000 entries a call (redis-py alone needs ~45 s for the million; this takes ~10 s), and the
dead letters go through pipelined XADDs. It runs against the benchmark's private server only.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass

import redis

from workers.core.events import decode_envelope
from workers.core.keys import DEFAULT_GROUP, DEFAULT_STREAM, EVENT_FIELD, Keys, dead_stream
from workers.redis import stats
from workers.redis.deadletter import DeadLetter

STREAM = DEFAULT_STREAM
GROUP = DEFAULT_GROUP
CONSUMERS = tuple(f"bench-host-{n}" for n in range(1, 5))
CHUNK = 10_000  # XADDs per pipeline round trip, and COUNT of each XREADGROUP
HEARTBEAT_TTL_S = 3_600
KEYS = Keys()

# The same JSON as envelope() below, formatted by the server: ARGV start, end, time.
XADD_CHUNK = """
local template = '{"type":"order.placed","source":"shop","id":"order-%d","subject":"order/%d",'
  .. '"time":"%s","data":{"order":%d,"total_cents":%d,"items":%d}}'
for n = tonumber(ARGV[1]), tonumber(ARGV[2]) - 1 do
  redis.call('XADD', KEYS[1], '*', 'event',
    string.format(template, n, n, ARGV[3], n, 1000 + n % 9000, 1 + n % 5))
end
return 1
"""

# One XREADGROUP COUNT ARGV[3] as consumer ARGV[2]; the entries at positions (ARGV[5]: of
# the first one read) divisible by ARGV[4] stay pending, the rest is acked.
# Returns 0 when there was nothing to read, else {1, kept ids...}.
READ_ACK_CHUNK = """
local reply = redis.call('XREADGROUP', 'GROUP', ARGV[1], ARGV[2], 'COUNT', ARGV[3],
  'STREAMS', KEYS[1], '>')
if not reply then return 0 end
local every, seen = tonumber(ARGV[4]), tonumber(ARGV[5])
local kept, ack = {1}, {}
for i, entry in ipairs(reply[1][2]) do
  local position = seen + i - 1
  if position % every == 0 then kept[#kept + 1] = entry[1] else ack[#ack + 1] = entry[1] end
end
for i = 1, #ack, 1000 do
  redis.call('XACK', KEYS[1], ARGV[1], unpack(ack, i, math.min(i + 999, #ack)))
end
return kept
"""


@dataclass(frozen=True, slots=True)
class Shape:
    label: str
    entries: int
    pending: int
    dead: int


# Both sets fill every page (50 rows), so the ratio compares the same work at two sizes.
LARGE = Shape("1,000,000 entries", 1_000_000, 100_000, 10_000)
SMALL = Shape("100 entries", 100, 100, 100)


@dataclass(frozen=True, slots=True)
class Built:
    shape: Shape
    seconds: float  # wall time to build it
    xadd_s: float
    read_ack_s: float
    mid_entry: str  # an entry id in the middle of the stream
    mid_pending: str  # a pending id in the middle of the pending entries list
    mid_dead: str  # a dead-letter id in the middle of the dead-letter stream
    used_mib: float  # what the data set added to the server's used_memory


def envelope(n: int, at: str) -> str:
    """A small envelope that decodes (workers.core.events.decode_envelope), with a subject."""
    return json.dumps(
        {
            "type": "order.placed",
            "source": "shop",
            "id": f"order-{n}",
            "subject": f"order/{n}",
            "time": at,
            "data": {"order": n, "total_cents": 1_000 + n % 9_000, "items": 1 + n % 5},
        },
        separators=(",", ":"),
    )


def _now_iso() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def _add_entries(client: redis.Redis, count: int) -> None:
    """XADD in chunks; the server formats each envelope, so 1,000,000 take seconds, not the
    half minute redis-py needs to pack as many commands."""
    add = client.register_script(XADD_CHUNK)
    at = _now_iso()
    for start in range(0, count, CHUNK):
        add(keys=[STREAM], args=[start, min(start + CHUNK, count), at])


def _read_and_ack(client: redis.Redis, shape: Shape) -> list[str]:
    """The group reads everything, one XREADGROUP COUNT 10000 per consumer in turn, and acks
    all but every k-th entry (k = entries / pending), so pending entries spread over the
    stream and the consumers. Runs server-side: only the kept ids travel. Returns them."""
    client.xgroup_create(STREAM, GROUP, id="0")
    every = max(shape.entries // shape.pending, 1)
    read_ack = client.register_script(READ_ACK_CHUNK)
    pending: list[str] = []
    for turn in range(shape.entries // CHUNK + 2):  # one more read finds nothing left
        consumer = CONSUMERS[turn % len(CONSUMERS)]
        kept = read_ack(keys=[STREAM], args=[GROUP, consumer, CHUNK, every, turn * CHUNK])
        if kept == 0:
            return pending
        pending += [str(i) for i in kept[1:]]
    raise RuntimeError("the group kept reading past the end of the stream")


def _dead_letters(client: redis.Redis, count: int, entry_ids: list[str]) -> None:
    """Shaped as the engine's (engine/settle.py: max-deliveries after the agent kept failing)."""
    at = _now_iso()
    for start in range(0, count, CHUNK):
        with client.pipeline(transaction=False) as pipe:
            for n in range(start, min(start + CHUNK, count)):
                letter = DeadLetter(
                    event=envelope(n, at),
                    stream=STREAM,
                    group=GROUP,
                    entry_id=entry_ids[n % len(entry_ids)],
                    deliveries=5,
                    reason="max-deliveries",
                    error="Traceback (most recent call last):\n  ...\n"
                    f"ValueError: order {n}: payment provider answered 503",
                    dead_at=at,
                    by=CONSUMERS[n % len(CONSUMERS)],
                )
                pipe.xadd(dead_stream(STREAM), letter.fields())
            pipe.execute()


def _counters(client: redis.Redis, shape: Shape) -> None:
    done = shape.entries - shape.pending
    values = {
        "processed": done - shape.dead,
        "failed": shape.dead * 5,
        "dead_lettered": shape.dead,
        "idempotency_hits": shape.entries // 100,
        "busy": 7,
        "fenced": 1,
        "deleted": 0,
        "reclaimed": shape.pending // 10,
        "retried": shape.dead * 4,
        "deferred": 3,
        "retries": shape.dead * 4,
        "cancelled": 2,
        "waits": 0,
        "answers": 0,
    }
    assert set(values) == set(stats.COUNTERS), "workers.redis.stats.COUNTERS changed"
    with client.pipeline(transaction=False) as pipe:
        pipe.hset(KEYS.stats(STREAM), mapping=values)
        pipe.sadd(KEYS.streams_index, STREAM)  # as producers and workers register a stream
        pipe.execute()


def heartbeats(client: redis.Redis) -> None:
    """The four consumers as live runworkers (workers.engine.housekeeping's heartbeat hash)."""
    now_ms = int(time.time() * 1000)
    with client.pipeline(transaction=False) as pipe:
        for n, consumer in enumerate(CONSUMERS):
            key = KEYS.worker(consumer)
            info = {
                "consumer": consumer,
                "host": f"bench-host-{n + 1}",
                "pid": 1000 + n,
                "stream": STREAM,
                "group": GROUP,
                "concurrency": 64,
                "started_ms": now_ms - 3_600_000,
                "processed": 225_000,
                "inflight": 3,
                "current": "order.placed 1700000000000-0",
                "state": "running",
            }
            pipe.hset(key, mapping={k: str(v) for k, v in info.items()})
            pipe.expire(key, HEARTBEAT_TTL_S)
            pipe.zadd(KEYS.workers_index, {consumer: now_ms})
        pipe.execute()


def build(client: redis.Redis, shape: Shape) -> Built:
    """Fill an empty database of the private server with ``shape``."""
    if client.dbsize():
        raise RuntimeError("the console data set needs an empty database")
    memory = int(client.info("memory")["used_memory"])
    began = time.perf_counter()
    _add_entries(client, shape.entries)
    added = time.perf_counter()
    pending = _read_and_ack(client, shape)
    read = time.perf_counter()
    stream_ids = [str(i) for i, _ in client.xrange(STREAM, count=shape.dead)]
    _dead_letters(client, shape.dead, stream_ids)
    _counters(client, shape)
    heartbeats(client)
    seconds = time.perf_counter() - began
    _check(client, shape)
    middle = shape.entries // 2
    mid_entry = client.xrange(STREAM, count=middle + 1)[-1][0] if shape.entries < CHUNK else None
    if mid_entry is None:  # walk to the middle in pages rather than one huge reply
        cursor = "-"
        for _ in range(middle // CHUNK):
            page = client.xrange(STREAM, min=cursor, count=CHUNK)
            cursor = "(" + str(page[-1][0])
        mid_entry = client.xrange(STREAM, min=cursor, count=1)[0][0]
    dead = client.xrevrange(dead_stream(STREAM), count=shape.dead // 2 + 1)
    return Built(
        shape=shape,
        seconds=seconds,
        xadd_s=added - began,
        read_ack_s=read - added,
        mid_entry=str(mid_entry),
        mid_pending=pending[len(pending) // 2 - 1],  # 50 after it even in the small set
        mid_dead=str(dead[-1][0]),
        used_mib=(int(client.info("memory")["used_memory"]) - memory) / 2**20,
    )


def _check(client: redis.Redis, shape: Shape) -> None:
    length = client.xlen(STREAM)
    group = next(g for g in client.xinfo_groups(STREAM) if g["name"] == GROUP)
    dead = client.xlen(dead_stream(STREAM))
    got = (length, int(group["pending"]), int(group.get("lag") or 0), dead)
    want = (shape.entries, shape.pending, 0, shape.dead)
    if got != want:
        raise RuntimeError(f"data set (length, pending, lag, dead) is {got}, not {want}")
    first = client.xrange(STREAM, count=1)[0][1][EVENT_FIELD]
    body = decode_envelope(first)  # raises if the server-side template is not an envelope
    if first != envelope(0, str(json.loads(first)["time"])) or body.type != "order.placed":
        raise RuntimeError(f"the stream's envelopes differ from envelope(): {first}")
