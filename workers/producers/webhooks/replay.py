"""Publishing a webhook once per signed body: a replay inside the window adds nothing.

A sender's delivery id (``X-GitHub-Delivery``, a generic ``id_header``) and GitHub's event
name travel in headers the signature does not cover, so a captured body re-sent with a new
id would otherwise be a new event. The body is what is signed: one script looks up its
digest, and only if it is unseen appends the entry and remembers the digest for the window,
so the check and the XADD cannot be split by a crash or a concurrent copy.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

import redis
from redis.commands.core import Script

from workers.core.errors import ConfigurationError, RedisUnavailable
from workers.core.events import Envelope, canonical_json, event_hash
from workers.core.keys import EVENT_FIELD, Keys

DEFAULT_REPLAY_WINDOW_S = 7 * 24 * 3600  # GitHub keeps deliveries (and redelivers) for 7 days

# KEYS: stream, seen key. ARGV: field, event JSON, event hash, window in s.
# The seen key holds "<entry id> <event hash>" of the first copy.
PUBLISH_ONCE = """
local seen = redis.call('GET', KEYS[2])
if seen then return {0, seen} end
local entry_id = redis.call('XADD', KEYS[1], '*', ARGV[1], ARGV[2])
redis.call('SET', KEYS[2], entry_id .. ' ' .. ARGV[3], 'EX', ARGV[4])
return {1, entry_id}
"""


@dataclass(frozen=True, slots=True)
class Published:
    """Where the body's event is: this call's new entry, or the first copy's."""

    entry_id: str
    hash: str
    duplicate: bool


def check_window(window_s: int) -> int:
    if window_s < 1:
        raise ConfigurationError(
            f"STREAMDESK_WEBHOOK_REPLAY_WINDOW_S must be at least 1 s, got {window_s}"
        )
    return window_s


def body_digest(source: str, body: bytes) -> str:
    """The same body to two sources is two events: the source is part of the digest."""
    return hashlib.sha256(canonical_json([source, hashlib.sha256(body).hexdigest()])).hexdigest()


class OncePublisher:
    """Runs the script by its SHA (loaded on first use and after a server restart)."""

    def __init__(self, keys: Keys, window_s: int) -> None:
        self.keys = keys
        self.window_s = check_window(window_s)
        # Bytes: a text script would need a client for its encoding; any client may run it.
        self._script = Script(None, PUBLISH_ONCE.encode())  # type: ignore[arg-type]

    def publish(
        self, client: redis.Redis, stream: str, envelope: Envelope, *, source: str, body: bytes
    ) -> Published:
        digest_key = self.keys.webhook_seen(stream, body_digest(source, body))
        own_hash = event_hash(envelope)
        args: list[str | int] = [EVENT_FIELD, envelope.to_json(), own_hash, self.window_s]
        try:
            fresh, value = self._script(keys=[stream, digest_key], args=args, client=client)
        except (redis.ConnectionError, redis.TimeoutError) as exc:
            raise RedisUnavailable(f"could not publish to {stream}: {exc}") from exc
        if fresh:
            return Published(str(value), own_hash, duplicate=False)
        entry_id, _, first_hash = str(value).partition(" ")
        return Published(entry_id, first_hash, duplicate=True)
