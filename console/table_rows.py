"""Reads and renders the live tables (``console/live/tables.py`` sends them): the first page
of a group's pending entries and of its retry queue, and of a stream's dead letters.

An entry point beside the consumer that starts it: it draws on the reads and the page's
own context builder (``console/views/streams.py``), so a live row is the row the page
renders, never a second copy of it. (Not in ``console/live``: that layer reads no pages.)
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

import redis
from django.db import close_old_connections
from django.template.loader import render_to_string

from console.live import realtime
from console.reads import browse
from console.runtime import keys, redis_client
from console.views.streams import pending_context, retries_context
from workers.core.keys import DEFAULT_GROUP, Keys
from workers.from_settings import engine_config

log = logging.getLogger("streamdesk.console")


def server_now(client: redis.Redis, keys: Keys, stream: str, group: str) -> tuple[int, bool]:
    """The server's clock (ms) and whether the group is paused, in one round trip."""
    with client.pipeline(transaction=False) as pipe:
        pipe.time()
        pipe.exists(keys.paused(stream, group))
        (secs, micros), paused = pipe.execute()
    return int(secs) * 1000 + int(micros) // 1000, bool(paused)


@dataclass(frozen=True, slots=True)
class TableReader:
    """Reads and renders one live table, both variants; ``read`` is called in a thread."""

    client: redis.Redis
    keys: Keys
    claim_idle_ms: int
    max_deliveries: int
    # The home group's name: a dead letter of another group says whose (issue 31).
    home: str = DEFAULT_GROUP

    def read(self, name: str) -> tuple[int, dict[bool, str]] | None:
        try:
            kind, stream, group = realtime.parse_table_key(name)
            at_ms, paused = server_now(self.client, self.keys, stream, group or "-")
            if kind == realtime.DEAD_TABLE:
                dead = browse.dead_page(self.client, stream)
                context = {"page": dead, "home": self.home}
                return at_ms, self._variants("console/_dead_rows.html", context, stream)
            if kind == realtime.RETRIES_TABLE:
                context = retries_context(
                    self.client, (stream, group), at_ms, self.claim_idle_ms, self.max_deliveries
                )
                return at_ms, self._variants("console/_retry_rows.html", context, stream)
            page = browse.pending_page(
                self.client, stream, group, waits=self.keys.waits(stream, group)
            )
            context = pending_context(
                self.client, (stream, group), page, at_ms, self.claim_idle_ms, paused
            )
            return at_ms, self._variants("console/_pending_rows.html", context, stream)
        except (ValueError, redis.ResponseError) as exc:
            log.debug("console: live table %r not shown: %s", name[:200], exc)
            return None
        finally:
            close_old_connections()  # a thread of the executor: give back an aged connection

    def _variants(self, template: str, context: dict[str, Any], stream: str) -> dict[bool, str]:
        # No request, so no CSRF token to render (the rows' templates leave it out): a pushed
        # row's form posts through htmx, which sends the page's token in its header
        # (base.html's hx-headers).
        shared = {**context, "stream": stream}
        return {
            operate: render_to_string(template, {**shared, "can_operate": operate})
            for operate in (False, True)
        }


def reader() -> TableReader:
    config = engine_config()
    return TableReader(
        redis_client(), keys(), config.claim_idle_ms, config.max_deliveries, config.group
    )
