"""Django glue: the engine's configuration and Redis connection, from settings."""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

import redis
from django.conf import settings

from workers.core.config import EngineConfig
from workers.core.partitions import Partitions
from workers.redis.client_names import WORKER, client_name
from workers.redis.connection import connect, is_cluster, resolve_url
from workers.redis.embedded import EmbeddedValkey
from workers.runtime.llm.config import LLMConfig
from workers.runtime.ratelimit import Budget, budgets_from, parse_budgets
from workers.timers import Schedule, default_schedules
from workers.timers import from_settings as schedules_from_settings


def data_dir() -> Path:
    return Path(settings.STREAMDESK_DATA_DIR)


def redis_url() -> str:
    """``REDIS_URL``, or the embedded server's URL (starting it if needed)."""
    return resolve_url(settings.REDIS_URL, data_dir())


def start_embedded() -> str | None:
    """With no ``REDIS_URL``, start the embedded server unless it answers already: its URL
    when this call started it (for a command to say so, once), else None."""
    if settings.REDIS_URL:
        return None
    server = EmbeddedValkey(data_dir())
    return server.url if server.ensure_running() else None


def engine_config(**overrides: Any) -> EngineConfig:
    return EngineConfig.from_mapping(dict(settings.STREAMDESK), **overrides)


def partitions(stream: str, client: object = None) -> Partitions:
    """The partition streams of ``stream`` under ``STREAMDESK_PARTITIONS``; tagged when
    ``client`` is a cluster client (its gate records must share each partition's slot)."""
    return Partitions(stream, int(settings.STREAMDESK.get("partitions", 1)), is_cluster(client))


def stream_partitions(stream: str) -> list[str]:
    """The streams an action on ``stream`` acts on: a logical stream's partitions (on a
    cluster, a single partition is tagged too), else ``stream`` itself."""
    if "{" in stream:  # a partition already
        return [stream]
    return partitions(stream, redis_client()).streams


def rate_budgets() -> dict[str, Budget]:
    """``STREAMDESK_RATE_LIMITS``: a ``"github=50/s:100,..."`` string or a dict of
    ``{"rate": per second, "burst": n}``."""
    raw = getattr(settings, "STREAMDESK_RATE_LIMITS", {})
    return parse_budgets(raw) if isinstance(raw, str) else budgets_from(raw)


def llm_config() -> LLMConfig:
    config = getattr(settings, "STREAMDESK_LLM", None)
    return config if isinstance(config, LLMConfig) else LLMConfig()


@functools.cache
def _client(url: str, name: str | None) -> redis.Redis:
    return connect(url, encoding_errors="replace", client_name=name)


def redis_client(name: str | None = None) -> redis.Redis:
    """A shared, version-checked sync client for this process, one per connection ``name``
    (``CLIENT SETNAME``, see ``workers.redis.client_names``; None sets none): a cluster
    client when ``REDIS_URL`` names a cluster node."""
    return _client(redis_url(), name)


def worker_redis_client() -> redis.Redis:
    """``redis_client`` for the threads of a ``runworker`` process (its history recorder,
    its relay): named as a worker's, so the console counts their commands as the fleet's."""
    return redis_client(client_name(WORKER))


def configured_streams() -> tuple[str, ...]:
    """The configured stream's partition streams: a sample reads them even before anything
    is published to them (``workers.monitor.sample.collect``'s ``extra_streams``)."""
    return tuple(partitions(engine_config().stream, redis_client()).streams)


def home_group() -> str:
    """For the actions that hash a group's entries as its agent's runs (workers/core/
    fanout.py): the home group's name, whose named agents' groups are ``<home>:<name>``."""
    return engine_config().group


def action_args() -> dict[str, Any]:
    """What every operator action (``workers.operations``) takes from its caller: this
    process's Redis client and key names."""
    return {"client": redis_client(), "keys": engine_config().keys}


def schedules() -> list[Schedule]:
    """Every declared schedule: ``@schedule`` in code (the agents' modules are loaded by
    now), then ``STREAMDESK_SCHEDULES`` (JSON text or a list of mappings); InvalidSchedule
    for a bad one or two of one name."""
    from workers.timers import Schedules

    every = Schedules()
    for one in [*default_schedules, *schedules_from_settings(settings.STREAMDESK_SCHEDULES)]:
        every.add(one)
    return list(every)
