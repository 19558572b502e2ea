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
from typing import Any

import redis
from redis.commands.core import Script

from workers.core.errors import ConfigurationError, RedisUnavailable
from workers.core.events import Envelope, canonical_json, event_hash
from workers.core.keys import EVENT_FIELD, Keys
from workers.core.lua import lua_script
from workers.redis.connection import UNREACHABLE
from workers.redis.pipelines import on_master
from workers.redis.replication import Durability, check_confirmed, queue_wait

DEFAULT_REPLAY_WINDOW_S = 7 * 24 * 3600  # GitHub keeps deliveries (and redelivers) for 7 days


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
        self._script = Script(None, lua_script(__package__, "publish_once").encode())  # type: ignore[arg-type]

    def publish(
        self,
        client: redis.Redis,
        stream: str,
        envelope: Envelope,
        *,
        source: str,
        body: bytes,
        durability: Durability | None = None,
    ) -> Published:
        """``durability``: return only once that many replicas hold the entry (NotReplicated
        otherwise, and the sender should retry: its copy then finds the first one)."""
        digest_key = self.keys.webhook_seen(stream, body_digest(source, body))
        own_hash = event_hash(envelope)
        durable = int(durability is not None)
        args: list[str | int] = [EVENT_FIELD, envelope.to_json(), own_hash, self.window_s, durable]

        def run(master: redis.Redis) -> list[Any]:
            with master.pipeline(transaction=False) as pipe:
                self._script(keys=[stream, digest_key], args=args, client=pipe)
                if durability is not None:
                    queue_wait(pipe, durability)
                return pipe.execute()

        try:
            # A repeat finds the body's digest: the script publishes it once.
            replies = on_master(client, stream, run)
        except UNREACHABLE as exc:
            raise RedisUnavailable(f"could not publish to {stream}: {exc}") from exc
        fresh, value = replies[0]
        if durability is not None:
            check_confirmed(int(replies[1]), durability, f"webhook {source}'s event")
        if fresh:
            return Published(str(value), own_hash, duplicate=False)
        entry_id, _, first_hash = str(value).partition(" ")
        return Published(entry_id, first_hash, duplicate=True)
