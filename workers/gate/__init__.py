"""The idempotency gate: one Redis record per event hash, so workers do not start an event twice.

Everything that reads or writes a gate record lives here: the Lua scripts (``lua/*.lua``),
the state names (``states.GateState``) and their transitions, documented once in
``states.py``. The engine's side is ``fast.Gate``; the operators' and the console's side
(dead-letter holds, force re-run, cancel, reads) is ``operator``. docs/gate.md explains the design.
"""

from __future__ import annotations

from workers.gate.fast import ACQUIRE, CANCEL_ASKED, DONE, RELEASE, RENEW, Gate, Ticket, lease_name
from workers.gate.operator import (
    cancel_gate,
    clear_gate,
    dead_letter_chunk,
    gate_done,
    gate_key,
    live_lease,
    queue_gate_states,
)
from workers.gate.states import HOLDER_PREFIX, GateState, Outcome

__all__ = [
    "ACQUIRE",
    "CANCEL_ASKED",
    "DONE",
    "HOLDER_PREFIX",
    "RELEASE",
    "RENEW",
    "Gate",
    "GateState",
    "Outcome",
    "Ticket",
    "cancel_gate",
    "clear_gate",
    "dead_letter_chunk",
    "gate_done",
    "gate_key",
    "lease_name",
    "live_lease",
    "queue_gate_states",
]
