"""Django glue: the engine's configuration and Redis connection, from settings."""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

import redis
from django.conf import settings

from workers.config import EngineConfig
from workers.connection import connect, resolve_url


def data_dir() -> Path:
    return Path(settings.STREAMDESK_DATA_DIR)


def redis_url() -> str:
    """``REDIS_URL``, or the embedded server's URL (starting it if needed)."""
    return resolve_url(settings.REDIS_URL, data_dir())


def engine_config(**overrides: Any) -> EngineConfig:
    return EngineConfig.from_mapping(dict(settings.STREAMDESK), **overrides)


@functools.cache
def _client(url: str) -> redis.Redis:
    return connect(url, encoding_errors="replace")


def redis_client() -> redis.Redis:
    """A shared, version-checked sync client for this process."""
    return _client(redis_url())
