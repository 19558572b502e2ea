"""``arq bench.idle.peers.arq_app.WorkerSettings``: one no-op function. arq runs from a venv
of its own (``.venv/bench-arq``, made by ``make bench-idle``): it wants redis<6."""

from __future__ import annotations

import os
from typing import Any

from arq.connections import RedisSettings


async def noop(ctx: dict[str, Any]) -> None:
    """Never sent: the worker stays idle."""


class WorkerSettings:
    functions = [noop]  # arq reads its settings as class attributes
    redis_settings = RedisSettings.from_dsn(os.environ["REDIS_URL"])
