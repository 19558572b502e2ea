"""Flow control: per-key order and concurrency across the whole fleet.

An agent declared ``@agent(type, schema=S, key="subject" | "data.<field>", concurrency=N)``
runs at most N events with the same key value at once, on every worker together, in
publish order; ``concurrency`` without ``key`` caps the agent as a whole. An event that
must wait holds no slot: it stays in the group's pending list, and runs when the one ahead
of it is acked (docs/flow.md).

What lives here: the Lua scripts that keep each key's queue in Redis (``lua/``), ``Flow``
(the engine's one seam: a read that places keyed events in their queues atomically, a
screen for reclaimed entries, the release and hand-off once entries are acked) and
``specs_of`` (what the registry declares, as the scripts take it). The console reads the
queues through ``view``.

May import ``workers.core`` and ``workers.redis`` only; the engine imports this module,
never its submodules.
"""

from __future__ import annotations

from workers.flow.queues import Flow
from workers.flow.specs import FlowSpec, specs_of

__all__ = ["Flow", "FlowSpec", "specs_of"]
