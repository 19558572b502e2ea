"""Cancelling a run, the engine's side: how a worker learns that an operator asked to cancel
one of its running agents, stops it, and settles the run as ``cancelled``.

The request is on the event's gate record (``workers/gate/lua/cancel.lua``, written by
``workers/operations/cancel.py``) and announced on ``Keys.cancel_channel``; a worker that
missed the message learns at its next lease renewal (``Gate.renew_many`` says
``CANCEL_ASKED``). ``Cancels`` then flags the attempt (``ctx.cancelled``), cancels an async
agent's task (the agent sees CancelledError), lets a sync agent's thread run out (a thread
cannot be stopped: the lease and the slot stay held until it returns), and settles the
attempt itself: the run row ``cancelled`` and a timeline step saying who cancelled, then
one pipeline with the gate record ``cancelled``, the XACK and the ``cancelled`` counter.

The engine reaches this package through ``Cancels`` alone (``workers/engine/worker.py``).
It may import ``workers.core``, ``workers.gate``, ``workers.redis``, ``workers.store`` and,
for the collaborators the worker shares, ``workers.engine.ports``; never ``console``. The
channel reaches it through the process's one subscription (``workers/redis/listener.py``):
``Cancels`` is its handler for ``Keys.cancel_channel``.
"""

from __future__ import annotations

from workers.cancel.engine import Cancels
from workers.cancel.requests import CancelRequest

__all__ = ["CancelRequest", "Cancels"]
