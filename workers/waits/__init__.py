"""Runs that wait without holding anything: ``ctx.sleep``, ``ctx.sleep_until`` and
``ctx.wait_for_event``, and the operators' answers to them.

A run that waits writes its wait down (``store.Waits.wait``, one script: ``lua/wait.lua``),
then raises ``Suspended``: the engine acks its entry and releases its lease, so it holds no
slot, no task and no connection. Its envelope re-enters the stream when the wait ends: at a
sleep's end or a wait's timeout by the fleet's timer (the wake-up is a member of the
stream's delayed set, ``workers/timers``), or at once when an event answers it
(``Waits.answer_batch``, ``lua/answer.lua``: an indexed lookup, exactly once). The run
replays: its stored steps are not run again, and the wait step returns its outcome.
``workers/core/matching.py`` says what a match may name and how an event finds its waits.

The engine reaches this package through ``Waits`` alone (the worker builds one and hands it
to the agents' context and to its intake). May import ``workers.core`` and
``workers.redis``; never ``console``, the engine nor the store.
"""

from __future__ import annotations

from workers.core.matching import check_match, digest, event_digests, shape_of
from workers.core.waiting import WaitFor, WaitState
from workers.waits.store import KEEP_MS, Answered, Arrival, Waits, answer_of

__all__ = [
    "KEEP_MS",
    "Answered",
    "Arrival",
    "WaitFor",
    "WaitState",
    "Waits",
    "answer_of",
    "check_match",
    "digest",
    "event_digests",
    "shape_of",
]
