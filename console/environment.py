"""Reading settings from the environment: booleans, lists, the secret key, the TLS proxy."""

from __future__ import annotations

import logging
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import dj_database_url
from django.core.exceptions import ImproperlyConfigured

from workers.core.errors import ConfigurationError
from workers.redis.connection import check_url, password_ends_host, unencoded_password
from workers.redis.datadir import stored_secret

T = TypeVar("T")

TRUE = {"1", "true", "yes", "on"}
FALSE = {"0", "false", "no", "off", ""}


def env_bool(name: str, default: bool) -> bool:
    raw = os.environ.get(name)
    if raw is None:
        return default
    value = raw.strip().lower()
    if value not in TRUE | FALSE:
        raise ImproperlyConfigured(f"{name}={raw!r}: use 1/0, true/false, yes/no or on/off")
    return value in TRUE


def env_int(name: str, default: int, minimum: int = 0) -> int:
    raw = os.environ.get(name, "").strip()
    try:
        value = int(raw) if raw else default
    except ValueError:
        raise ImproperlyConfigured(f"{name}={raw!r}: expected a whole number") from None
    if value < minimum:
        raise ImproperlyConfigured(f"{name}={raw!r}: expected a whole number >= {minimum}")
    return value


def configured(build: Callable[[], T]) -> T:
    """What a ``workers`` reader builds from the environment, its ``ConfigurationError``
    raised as Django's ``ImproperlyConfigured``: manage.py prints that as one line, where
    any other error at settings time is a traceback."""
    try:
        return build()
    except ConfigurationError as exc:
        raise ImproperlyConfigured(str(exc)) from exc


def redis_url() -> str:
    """``REDIS_URL``, checked now: a password that a URL cannot hold as written would
    otherwise show its start in errors (workers/redis/connection.py ``check_url``)."""
    raw = os.environ.get("REDIS_URL", "").strip()
    return configured(lambda: check_url(raw)) if raw else ""


def env_list(name: str, default: str = "") -> list[str]:
    return [item.strip() for item in os.environ.get(name, default).split(",") if item.strip()]


def database(url: str) -> dict[str, Any]:
    """``DATABASE_URL`` parsed; a URL it cannot read is one line that shows none of it."""
    try:
        if password_ends_host(url):
            raise ImproperlyConfigured(unencoded_password("DATABASE_URL"))
        return dict(dj_database_url.parse(url, conn_max_age=60))
    except ValueError as exc:  # its messages name the scheme at most, never the password
        raise ImproperlyConfigured(f"DATABASE_URL: {exc}") from None


def log_level(raw: str) -> int | str:
    """``LOG_LEVEL`` as the logging module takes it: a name in any case, or a number."""
    level = raw.strip().upper() or "INFO"
    if level.isdigit():
        return int(level)
    if level in logging.getLevelNamesMapping():
        return level
    names = ", ".join(n for n in logging.getLevelNamesMapping() if n != "NOTSET")
    raise ImproperlyConfigured(f"LOG_LEVEL={raw!r}: use one of {names}")


def secret_key(debug: bool, data_dir: Path) -> str:
    """``SECRET_KEY``; in development (DEBUG on) one generated into ``data_dir`` and kept."""
    key = os.environ.get("SECRET_KEY", "")
    if key:
        return key
    if not debug:
        raise ImproperlyConfigured(
            "SECRET_KEY is not set. In production set it to a long random value, e.g. "
            "the output of: python -c 'import secrets; print(secrets.token_urlsafe(50))'. "
            "For local development set DEBUG=1 (make run does): a key is then generated "
            "into .streamdesk/secret_key and reused."
        )
    return stored_secret(data_dir / "secret_key")


def proxy_ssl_header(raw: str) -> tuple[str, str] | None:
    """``SECURE_PROXY_SSL_HEADER=X-Forwarded-Proto`` (or ``X-Forwarded-Proto: https``) into
    Django's ``("HTTP_X_FORWARDED_PROTO", "https")``. Only behind a proxy that sets the
    header on every request: a client could otherwise claim HTTPS."""
    if not raw.strip():
        return None
    name, _, value = raw.partition(":")
    meta = name.strip().upper().replace("-", "_")
    meta = meta if meta.startswith("HTTP_") else f"HTTP_{meta}"
    return meta, value.strip() or "https"
