"""The outbox relay: publish committed ``OutboxEvent`` rows to their streams, in id order.

At least once: rows are XADDed, then marked sent in the same database transaction. A relay
that dies between the two leaves the rows unsent and the next run XADDs them again, with the
same event id (the row id, source ``outbox``), so the same event hash: the gate runs each
row's agent once. One relay sends at a time (a PostgreSQL advisory lock; SQLite has one
writer anyway), which keeps every subject's events in id order on the stream; more relays
are hot standbys, and ``FOR UPDATE SKIP LOCKED`` keeps them off rows being sent regardless.
"""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass
from typing import Any, Protocol

import psycopg
import redis
from django.db import DatabaseError, connection, connections, transaction
from django.db.models import F
from psycopg import conninfo

from workers.core import tracing
from workers.core.errors import RedisUnavailable
from workers.core.events import Envelope, now_utc
from workers.from_settings import partitions
from workers.models import OutboxEvent
from workers.producers.outbox import NOTIFY_CHANNEL
from workers.producers.publish import publish_envelopes

log = logging.getLogger("streamdesk.relay")

# Any constant the application does not use: pg_try_advisory_xact_lock's key.
RELAY_LOCK_KEY = 0x5D0B0C
# How often a waiting relay looks at its stop flag.
STOP_CHECK_S = 0.25


@dataclass(frozen=True, slots=True)
class RelayConfig:
    batch_size: int = 500
    # SQLite has no notifications: look again after this long when idle.
    idle_sleep_s: float = 0.2
    # PostgreSQL: look again after this long even without a notification (a safety net).
    listen_timeout_s: float = 5.0
    # Wait after a Redis or database error before trying again.
    error_backoff_s: float = 1.0
    # Tests only: sleep between XADD and marking sent, so a test can kill the relay there.
    pause_after_xadd_s: float = 0.0


def envelope_of(row: OutboxEvent) -> Envelope:
    return Envelope(
        type=row.type,
        source=row.source,
        id=str(row.pk),
        subject=row.subject or None,
        time=row.created_at,
        data=row.data,
        context=row.context,
        idempotencykey=row.idempotency_key or None,
    )


class Relay:
    def __init__(self, client: redis.Redis, config: RelayConfig | None = None) -> None:
        self.client = client
        self.config = config or RelayConfig()
        self.sent = 0

    def run_once(self, batch: int | None = None) -> int:
        """Send one batch of unsent rows; returns how many were sent (0: nothing to do)."""
        limit = batch or self.config.batch_size
        # A cheap look first: on SQLite the transaction below takes the write lock.
        if not OutboxEvent.objects.filter(sent_at__isnull=True).exists():
            return 0
        ids: list[int] = []
        try:
            with transaction.atomic():
                if not self._lock():
                    return 0
                rows = list(
                    OutboxEvent.objects.select_for_update(skip_locked=True)
                    .filter(sent_at__isnull=True)
                    .order_by("id")[:limit]
                )
                ids = [row.pk for row in rows]
                self._publish(rows)
                OutboxEvent.objects.filter(id__in=ids).update(sent_at=now_utc())
        except RedisUnavailable as exc:
            self._record_failure(ids, exc)
            raise
        self.sent += len(ids)
        return len(ids)

    def _lock(self) -> bool:
        if connection.vendor != "postgresql":
            return True
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_try_advisory_xact_lock(%s)", [RELAY_LOCK_KEY])
            return bool(cursor.fetchone()[0])

    def _publish(self, rows: list[OutboxEvent]) -> None:
        by_stream: dict[str, list[Envelope]] = {}
        for row in rows:  # id order, kept within each stream
            by_stream.setdefault(row.stream, []).append(envelope_of(row))
        for stream, envelopes in by_stream.items():
            publish_envelopes(self.client, partitions(stream, self.client), envelopes)
        if self.config.pause_after_xadd_s:
            time.sleep(self.config.pause_after_xadd_s)

    def _record_failure(self, ids: list[int], exc: Exception) -> None:
        if ids:
            OutboxEvent.objects.filter(id__in=ids).update(
                attempts=F("attempts") + 1, last_error=str(exc)[:2000]
            )

    def run_forever(self, stop: threading.Event) -> None:
        """Send batches until ``stop`` is set, waiting for new rows when there are none.
        With tracing on, each row's event starts its own trace (its producer span)."""
        tracing.configure()
        waiter = waiter_for(self.config)
        try:
            while not stop.is_set():
                try:
                    sent = self.run_once()
                except (RedisUnavailable, DatabaseError) as exc:
                    log.warning("relay: %s; trying again", exc)
                    stop.wait(self.config.error_backoff_s)
                    continue
                if sent < self.config.batch_size:
                    waiter.wait(stop)
        finally:
            waiter.close()
            # This thread's connection: a kept one would hold the test database open.
            connections.close_all()


class Waiter(Protocol):
    def wait(self, stop: threading.Event) -> None: ...

    def close(self) -> None: ...


def waiter_for(config: RelayConfig) -> Waiter:
    """LISTEN/NOTIFY on PostgreSQL, a bounded sleep elsewhere."""
    if connection.vendor == "postgresql":
        return NotifyWaiter(connection.settings_dict, config.listen_timeout_s)
    return SleepWaiter(config.idle_sleep_s)


class SleepWaiter:
    """SQLite: a short, bounded sleep."""

    def __init__(self, sleep_s: float) -> None:
        self.sleep_s = sleep_s

    def wait(self, stop: threading.Event) -> None:
        stop.wait(self.sleep_s)

    def close(self) -> None:
        pass


class NotifyWaiter:
    """PostgreSQL: LISTEN on its own autocommit connection; emit()'s NOTIFY arrives on commit.

    LISTEN is issued before the relay's first batch, so a row committed while a batch is
    being sent still wakes the next wait.
    """

    def __init__(self, db: dict[str, Any], timeout_s: float) -> None:
        self.timeout_s = timeout_s
        params = {
            "dbname": db["NAME"],
            "user": db["USER"],
            "password": db["PASSWORD"],
            "host": db["HOST"],
            "port": db["PORT"],
        }
        given = {k: str(v) for k, v in params.items() if v}
        self.conn = psycopg.connect(conninfo.make_conninfo("", **given), autocommit=True)
        self.conn.execute(f"LISTEN {NOTIFY_CHANNEL}")

    def wait(self, stop: threading.Event) -> None:
        deadline = time.monotonic() + self.timeout_s
        while not stop.is_set() and time.monotonic() < deadline:
            for _ in self.conn.notifies(timeout=STOP_CHECK_S, stop_after=1):
                return

    def close(self) -> None:
        self.conn.close()
