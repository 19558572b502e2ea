"""Failed sign-ins counted in Redis per user and per address, so guessing is slow (docs/console.md).

Every door that checks a password goes through ``django.contrib.auth.authenticate``: the
console's login page, the admin's, anything added later. ``SignInThrottle`` is the first
authentication backend and stops ``authenticate`` while a counter is over its limit; the
``user_login_failed`` signal counts each failure. A bad API token counts per address too.
Counters are fixed windows (the first failure starts ``window_s``), shared by every console
process through Redis; a successful sign-in clears its user's counter, never the address's.
"""

from __future__ import annotations

import hashlib
import ipaddress
import logging
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import redis
from django.conf import settings
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest

from workers.core.errors import ConfigurationError, RedisUnavailable
from workers.core.keys import Keys

log = logging.getLogger(__name__)
USER, ADDRESS, TOKEN = "user", "address", "token"
# One IPv6 host usually holds a whole /64: count it as one address.
IPV6_PREFIX = 64


@dataclass(frozen=True, slots=True)
class ThrottleConfig:
    """Failures allowed in ``window_s`` before sign-ins are refused until it ends."""

    per_user: int = 5
    per_address: int = 20
    window_s: int = 900

    @classmethod
    def from_env(cls, environ: Mapping[str, str]) -> ThrottleConfig:
        names = {
            "per_user": "STREAMDESK_LOGIN_FAILURES_PER_USER",
            "per_address": "STREAMDESK_LOGIN_FAILURES_PER_ADDRESS",
            "window_s": "STREAMDESK_LOGIN_WINDOW_S",
        }
        values: dict[str, int] = {}
        for field, name in names.items():
            raw = environ.get(name, "").strip()
            if not raw:
                continue
            if not raw.isdigit() or int(raw) < 1:
                raise ConfigurationError(f"{name} must be a whole number >= 1, got {raw!r}")
            values[field] = int(raw)
        return cls(**values)


def config() -> ThrottleConfig:
    value = getattr(settings, "STREAMDESK_LOGIN_THROTTLE", None)
    return value if isinstance(value, ThrottleConfig) else ThrottleConfig()


def _digest(value: str) -> str:
    return hashlib.sha256(value.encode("utf-8", "replace")).hexdigest()[:32]


def client_address(request: HttpRequest | None) -> str:
    """The peer's address (behind a proxy: daphne ``--proxy-headers`` puts the client's
    there), an IPv6 address as its /64; empty when there is no request."""
    raw = "" if request is None else str(request.META.get("REMOTE_ADDR") or "")
    try:
        ip = ipaddress.ip_address(raw)
    except ValueError:
        return raw
    if ip.version == 6:
        return str(ipaddress.ip_network(f"{ip}/{IPV6_PREFIX}", strict=False))
    return str(ip)


class Throttle:
    def __init__(self, client: redis.Redis, keys: Keys, config: ThrottleConfig) -> None:
        self.client, self.keys, self.config = client, keys, config

    def _limits(self, username: str, address: str, scope: str) -> list[tuple[str, int]]:
        out: list[tuple[str, int]] = []
        if username:
            out.append((self.keys.sign_in_failures(USER, _digest(username.casefold())), 0))
        if address:
            out.append((self.keys.sign_in_failures(scope, _digest(address)), 1))
        return out

    def wait_s(self, username: str, address: str, scope: str = ADDRESS) -> int:
        """Seconds until a sign-in may be tried again; 0 when it may be tried now."""
        limits = self._limits(username, address, scope)
        if not limits:
            return 0
        pipe = self.client.pipeline(transaction=False)
        for key, _ in limits:
            pipe.get(key)
            pipe.ttl(key)
        replies = pipe.execute()
        caps = (self.config.per_user, self.config.per_address)
        wait = 0
        for n, (_, cap) in enumerate(limits):
            count, ttl = int(replies[2 * n] or 0), int(replies[2 * n + 1])
            if count >= caps[cap]:
                wait = max(wait, ttl if ttl > 0 else self.config.window_s)
        return wait

    def failed(self, username: str, address: str, scope: str = ADDRESS) -> None:
        pipe = self.client.pipeline(transaction=True)
        for key, _ in self._limits(username, address, scope):
            # The window starts with the first failure; INCR keeps the expiry SET gave it.
            pipe.set(key, 0, ex=self.config.window_s, nx=True)
            pipe.incr(key)
        pipe.execute()

    def succeeded(self, username: str) -> None:
        self.client.delete(self.keys.sign_in_failures(USER, _digest(username.casefold())))


def throttle() -> Throttle:
    from console.runtime import keys, redis_client

    return Throttle(redis_client(), keys(), config())


def minutes(wait_s: int) -> int:
    return max(1, math.ceil(wait_s / 60))


def too_many(wait_s: int, what: str = "failed sign-in attempts") -> str:
    n = minutes(wait_s)
    return f"Too many {what}: try again in {n} minute{'s' if n != 1 else ''}."


class SignInThrottle:
    """An authentication backend that authenticates nobody: it refuses everyone, before
    any password is checked, while their user or address is over its limit. It has no
    ``get_user``, so Django never picks it to load a session's user."""

    def authenticate(
        self, request: HttpRequest | None, username: str | None = None, **credentials: Any
    ) -> None:
        if throttle().wait_s(username or "", client_address(request)):
            # Stops authenticate() before any backend checks the password.
            raise PermissionDenied("too many failed sign-in attempts")


def on_login_failed(
    sender: Any, credentials: dict[str, Any], request: Any = None, **_: Any
) -> None:
    throttle().failed(str(credentials.get("username") or ""), client_address(request))


def on_logged_in(sender: Any, request: Any, user: Any, **_: Any) -> None:
    try:
        throttle().succeeded(user.get_username())
    except (RedisUnavailable, redis.ConnectionError, redis.TimeoutError) as exc:
        # The password was right: a count left standing must not turn that into an error.
        log.warning("sign-in of %s: failures not cleared, Redis unavailable (%s)", user, exc)
