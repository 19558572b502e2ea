"""Replay: a range of the stream fed back to one agent (``manage.py replay``, the console's
Replay page), as a tracked bulk job: resumable, cancellable, audited, with progress.

What lives here: the replay's plan (``plan.py``: the agent by name, the bounds, the
filters; ``bounds.py``), its preview (``preview.py``: entries counted in Redis by a Lua
script walking the range in stretches, ``counting.py``; what the agent already did counted
in the database, ``done.py``), and the job's work (``copying.py``: each event copied into
the stream it came from, for the agent's group alone, ``replayed_from`` its entry; forced,
as a new run linked to the one it repeats; ``groups.py``: the agent's group made first if
missing). ``start.py`` is the door: the dry run or the
job, and its audit record. The engine already understands the copies' fields
(``workers/core/fanout.py``). docs/replay.md.

May import ``workers.core``, ``workers.redis``, ``workers.models``, ``workers.store``,
``workers.operations`` (the bulk jobs) and ``workers.fanout`` (where a group starts);
never the engine, ``console`` nor settings: the caller passes its Redis client and the
registry.
"""

from __future__ import annotations

from workers.replay.bounds import parse_bound
from workers.replay.copying import REPLAYED_FROM_FIELD, ReplayWork
from workers.replay.plan import Replay, plan
from workers.replay.preview import ReplayPreview, preview
from workers.replay.start import BATCH, JOB_KINDS, checked_preview, replay

__all__ = [
    "BATCH",
    "JOB_KINDS",
    "REPLAYED_FROM_FIELD",
    "Replay",
    "ReplayPreview",
    "ReplayWork",
    "checked_preview",
    "parse_bound",
    "plan",
    "preview",
    "replay",
]
