"""The gate record's states and every transition between them, stated once.

A gate record is the hash ``streamdesk:idem:<hash>`` (``Keys.gate``) with fields ``state``,
``owner``, ``token`` (a fencing token that only grows) and ``lease_until`` (ms, on the
server's clock). Only the Lua scripts in ``workers/gate/lua/`` write it, each in one atomic
call; ``tests/unit/test_gate_scripts.py`` checks that they use no state outside ``GateState``.

Transitions (script: from -> to)::

    acquire   absent | released | running, lease expired -> running (owner, token + 1, lease)
              running, lease live -> unchanged (busy);  done | cancelled -> unchanged (hit)
              running, lease expired, a cancel asked for -> cancelled (hit: its worker died)
              a key of another type -> unchanged (broken: dead-lettered, never run)
    renew     running, same owner and token -> running (lease extended; says whether a
              cancel was asked for); otherwise unchanged
    release   running, same owner and token -> released (lease 0, token kept)
    done      any -> done (expires after STREAMDESK_DONE_TTL_S), after the database committed
    cancelled any -> cancelled (expires like done), after the database recorded the run
              cancelled (workers/cancel/)
    dead_letter (operator)
              absent | released | running, lease expired | an operator's hold
                -> running (owner ``HOLDER_PREFIX`` + who, lease hold_ms, token kept or 0)
              running, an agent's live lease -> unchanged;  done | cancelled -> unchanged
    clear (operator, force re-run)
              done | cancelled | released | running, lease expired | an operator's hold
                -> released (a cancel request forgotten)
              running, an agent's live lease -> refused;  absent -> unchanged
    cancel (operator, workers/cancel/)
              running, an agent's live lease -> running, fields ``cancel`` (who) and
                ``cancel_reason`` set: its worker cancels the agent, then ``cancelled``
              absent (an entry pending) | released | running, lease expired | a hold
                -> cancelled (its pending entries acked);  done | cancelled -> unchanged

Engine scripts (acquire, renew, release, done, cancelled) run in ``workers/gate/fast.py``;
operator scripts (dead_letter, clear, cancel) and the plain reads of a record in
``workers/gate/operator.py``.
docs/gate.md draws the engine's half and says why the database, not this record, decides.
"""

from __future__ import annotations

from enum import StrEnum


class GateState(StrEnum):
    """The ``state`` field of a gate record (no record: the event never started or expired)."""

    RUNNING = "running"  # an attempt holds a lease: owner, token, lease_until
    DONE = "done"  # the database committed the event's result: every copy is a hit
    RELEASED = "released"  # given back without a result: the next acquire starts at once
    CANCELLED = "cancelled"  # an operator cancelled the run: every copy is a hit, like done


class Outcome(StrEnum):
    """What ``acquire`` did for one event."""

    ACQUIRED = "acquired"
    TAKEOVER = "takeover"
    BUSY = "busy"
    HIT = "hit"
    # The record's key holds another type (WRONGTYPE): the event is dead-lettered, not run.
    BROKEN = "broken"


# Owners written by an operator's dead-lettering; a worker's owner is "<consumer>/<entry id>".
# Such a hold may be taken over by a later hold or cleared, never an agent's live lease.
HOLDER_PREFIX = "dead-letter:"
