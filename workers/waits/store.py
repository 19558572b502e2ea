"""The engine's side of waits, on the worker's async client: a run's wait begun or looked up
(``wait``, for ``ctx.sleep`` and ``ctx.wait_for_event``), and the waits a batch of events
answers (``answer_batch``, one round trip per batch, a second only when some event's type
is awaited)."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Sequence
from dataclasses import dataclass, field
from typing import Any, cast

from redis.asyncio import Redis
from redis.exceptions import ResponseError

from workers.core.events import Envelope, canonical_json
from workers.core.keys import Keys
from workers.core.lua import lua_script
from workers.core.matching import digest, event_digests, shape_of
from workers.core.waiting import WaitFor, WaitState

WAIT = lua_script(__package__, "wait")
ANSWER = lua_script(__package__, "answer")
# A wait's record is kept this long after it ends: the resumed run reads its answer there,
# so this bounds how long a fleet may be down between an answer and the run's resumption.
KEEP_MS = 7 * 24 * 3600 * 1000


# An event read by a worker, which may answer waits: its envelope, entry id and JSON.
Arrival = tuple[Envelope, str, str]


@dataclass(slots=True)
class Answered:
    """What a batch answered: {entry id: the event hashes it resumed}, for the events that
    resumed any; and which of the types no agent takes are awaited ones."""

    resumed: dict[str, list[str]] = field(default_factory=dict)
    awaited_types: set[str] = field(default_factory=set)

    @property
    def count(self) -> int:
        return sum(len(hashes) for hashes in self.resumed.values())


class Waits:
    """Waits on one stream, for one group's workers."""

    def __init__(
        self, client: Redis, keys: Keys, stream: str, group: str, intake: Redis | None = None
    ) -> None:
        self.client = client
        # The batch's lookup goes out beside the gate's call, before any agent starts: on a
        # connection of its own, held, as the gate's (a pooled one first yields to the loop,
        # which put 0.3 ms on every pickup).
        self._intake = intake if intake is not None else client
        self.keys = keys
        self.stream = stream
        self.group = group
        self._wait = client.register_script(WAIT)
        self._record_head = keys.wait(stream, "")

    async def wait(self, event_hash: str, run_type: str, envelope: str, on: WaitFor) -> WaitState:
        """Begin the wait of step ``on.step`` of the run ``event_hash`` or, begun already,
        say where it stands (one script call: begun once however often the run replays)."""
        keys = self.keys
        record = keys.wait(self.stream, event_hash)
        match = on.match or {}
        shape = shape_of(match)
        if on.kind == "event":
            shapes = keys.wait_shapes(self.stream, on.event_type)
            index = keys.wait_index(self.stream, digest(on.event_type, match))
            awaited = keys.awaited_types(self.stream)
        else:
            shapes = index = awaited = record
        args: list[Any] = [
            event_hash, on.kind, on.event_type, canonical_json(match).decode(), shape,
            on.delay_ms, on.at_ms, envelope, self.group, run_type, on.step, KEEP_MS, on.note,
        ]  # fmt: skip
        reply = await self._wait(
            keys=[
                record,
                keys.waiting(self.stream),
                keys.delayed(self.stream),
                shapes,
                index,
                awaited,
            ],
            args=args,
        )
        state, until_ms, now_ms, answer = reply[:4]
        if len(reply) > 4 and int(until_ms) > 0:
            await self._wake_timer(int(until_ms))
        return WaitState(_text(state), int(until_ms), int(now_ms), _text(answer))

    async def _wake_timer(self, until_ms: int) -> None:
        """A new wake-up in the stream's delayed set: the timer learns of the stream (the
        first time) and of the due time, as it may sleep past it (``workers/timers``)."""
        # Two commands, not a pipeline: a cluster pipeline refuses PUBLISH (it has no key).
        await self.client.sadd(self.keys.delayed_streams, self.stream)  # type: ignore[misc]
        await self.client.publish(self.keys.timers_channel, str(until_ms))

    async def aclose(self) -> None:
        if self._intake is not self.client:
            await self._intake.aclose()

    def shape_keys(self, types: Sequence[str]) -> list[str]:
        """The keys of these event types' match shapes, for a caller that reads them in a
        call it makes anyway (the gate's): ``answer_batch(..., read=)`` then sends no HKEYS."""
        return [self.keys.wait_shapes(self.stream, t) for t in types]

    @staticmethod
    def nothing_to_answer(read: Sequence[list[Any] | None], unclaimed: Sequence[str]) -> bool:
        """The shapes read (``shape_keys``) say that no event of the batch can answer a wait,
        and no type is left to tell apart: the lookup is over without a command."""
        return not unclaimed and all(r == [] for r in read)

    async def answer_batch(
        self,
        arrivals: Sequence[Arrival],
        unclaimed: Sequence[str] = (),
        read: Sequence[list[Any] | None] | None = None,
    ) -> Answered:
        """Resume the runs these events answer. One HKEYS per type in the batch (pipelined,
        with the check of which ``unclaimed`` types, those no agent takes, are awaited
        ones), unless ``read`` holds their replies already (``shape_keys``, in sorted type
        order); then one script call per event that could answer."""
        types = sorted({envelope.type for envelope, _, _ in arrivals})
        if not types:
            return Answered()
        odd = sorted(set(unclaimed))
        if read is not None:
            if any(r is None for r in read):
                # As the HKEYS it stands for would have: the batch's lookup fails.
                raise ResponseError("WRONGTYPE: a wait-shapes key is not a hash")
            replies: list[Any] = list(read)
            if odd:
                asked = self._intake.smismember(self.keys.awaited_types(self.stream), odd)
                replies.append(await cast(Awaitable[list[Any]], asked))
        elif len(types) == 1 and not odd:
            # The common batch: one type, every event taken by an agent. One command; a
            # pipeline's setup cost more CPU than the command itself.
            key = self.keys.wait_shapes(self.stream, types[0])
            replies = [await cast(Awaitable[list[Any]], self._intake.hkeys(key))]
        else:
            async with self._intake.pipeline(transaction=False) as pipe:
                for t in types:
                    pipe.hkeys(self.keys.wait_shapes(self.stream, t))
                if odd:
                    pipe.smismember(self.keys.awaited_types(self.stream), odd)
                replies = await pipe.execute()
        awaited = {t for t, yes in zip(odd, replies.pop(), strict=True) if yes} if odd else set()
        shapes = {t: [_text(s) for s in r] for t, r in zip(types, replies, strict=True) if r}
        if not shapes:
            return Answered(awaited_types=awaited)
        resumed = await self._answer_each([a for a in arrivals if a[0].type in shapes], shapes)
        return Answered(resumed, awaited)

    async def _answer_each(
        self, arrivals: list[Arrival], shapes: dict[str, list[str]]
    ) -> dict[str, list[str]]:
        keys = self.keys
        head = [keys.waiting(self.stream), keys.delayed(self.stream), self.stream]
        calls = []
        for envelope, entry_id, raw in arrivals:
            digests = event_digests(envelope, shapes[envelope.type])
            if digests:
                index = [keys.wait_index(self.stream, d) for d in digests]
                args: list[Any] = [raw, entry_ms(entry_id), self._record_head, KEEP_MS, entry_id]
                calls.append((entry_id, head + index, args))
        if not calls:
            return {}
        async with self.client.pipeline(transaction=False) as pipe:
            for _, call_keys, args in calls:
                # EVAL: the script text rides along, but only for events someone awaits.
                pipe.eval(ANSWER, len(call_keys), *call_keys, *args)
            replies = await pipe.execute()
        resumed = {c[0]: [_text(h) for h in reply] for c, reply in zip(calls, replies, strict=True)}
        return {entry_id: hashes for entry_id, hashes in resumed.items() if hashes}


def entry_ms(entry_id: str) -> int:
    """When an entry was added (its id's milliseconds), 0 if the id says nothing."""
    head = entry_id.partition("-")[0]
    return int(head) if head.isdigit() else 0


def answer_of(state: WaitState) -> dict[str, Any] | None:
    return json.loads(state.answer) if state.answer else None


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)
