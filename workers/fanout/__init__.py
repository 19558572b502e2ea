"""Several agents on one event type, each in a consumer group of its own.

What lives here: which groups a worker process reads (``lineup``: the home group and one per
named agent, or those ``runworker --agent`` names), creating those groups where each must
start (``ensure_groups``), and a named agent's read, which lets others' entries by in the
server (``OwnReader``). Names, group names and run hashes are pure rules in
``workers/core/fanout.py``; the engine sorts another group's entries out in its intake.

The engine reaches this package through ``lineup`` and ``ensure_groups`` (serve.py) and
``OwnReader`` (the worker's read of a named agent's group).
May import ``workers.core`` and ``workers.redis``; never ``console``, the engine nor the store.
"""

from __future__ import annotations

from workers.fanout.groups import ensure_groups, start_of
from workers.fanout.lineup import Loop, lineup, select
from workers.fanout.reader import OwnReader

__all__ = ["Loop", "OwnReader", "ensure_groups", "lineup", "select", "start_of"]
