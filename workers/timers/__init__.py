"""Delayed and scheduled events: an event that enters its stream later, once.

``publish(..., delay_s=)`` / ``at=`` holds the envelope in its stream's delayed sorted set
(``delayed.py``); ``@schedule("*/5 * * * *", type=...)`` or ``STREAMDESK_SCHEDULES`` declares
an event per cron tick (``cron.py``, ``schedules.py``). One timer for the whole fleet
(``timer.py``, run by the lease holder among the candidates that ``service.py`` starts in
each ``runworker``) moves due events into their streams and publishes due ticks, each with
one Lua script (``lua/``) that makes it exactly once however many timers race. It sleeps
until the next due time or a wake-up on a pub/sub channel (heard through the worker
process's one listener, ``wakeups.py``): with nothing delayed and no schedule it sends no
command at all (docs/timers.md).

The edges reach it through this module alone: ``publish`` (``producers/publish.py``) for
``due_time`` and ``add``, ``runworker`` for ``start_timer`` (and the ``Relayed`` handler it
gives the engine's listener: the engine itself never imports this package), the console for
``view``.
May import ``workers.core``, ``workers.redis`` and the lease of ``workers.monitor.recorder``;
never ``console`` nor the engine.
"""

from __future__ import annotations

from workers.timers import view
from workers.timers.cron import Cron, parse
from workers.timers.delayed import NOW, Due, add, due_time
from workers.timers.schedules import (
    DEFAULT_GRACE_S,
    Schedule,
    Schedules,
    default_schedules,
    from_settings,
    make,
    schedule,
)
from workers.timers.service import TimerThread, start_timer
from workers.timers.timer import EntryFor, Timer, TimerCadence
from workers.timers.wakeups import OwnSubscription, Relayed

__all__ = [
    "DEFAULT_GRACE_S",
    "NOW",
    "Cron",
    "Due",
    "EntryFor",
    "OwnSubscription",
    "Relayed",
    "Schedule",
    "Schedules",
    "Timer",
    "TimerCadence",
    "TimerThread",
    "add",
    "default_schedules",
    "due_time",
    "from_settings",
    "make",
    "parse",
    "schedule",
    "start_timer",
    "view",
]
