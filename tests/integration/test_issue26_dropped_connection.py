"""Every read the worker's database threads make outside a transaction recovers from a
connection the server dropped (issue 26, item 4): the failing call raises, the connection is
found broken and closed, and the next call reconnects. The server side of a restart, without
restarting anything: the connection's own backend is terminated (PostgreSQL only; the e2e
test tests/e2e/test_issue26_pg_restart.py restarts a private server under a real worker)."""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import Any

import pytest
from django.db import DatabaseError, connection

from tests.support.runs import run
from workers.core.records import Finish
from workers.store.runs import DjangoRunStore

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(connection.vendor != "postgresql", reason="terminates a PostgreSQL backend"),
]

READS: dict[str, Callable[[DjangoRunStore], Any]] = {
    "done_among": lambda store: store.done_among(["h"]),
    "load_steps": lambda store: store.load_steps(["h"]),
}
ANSWERS = {"done_among": {"h"}, "load_steps": {"h": {}}}


def drop_connection() -> None:
    """What a server restart does to an idle connection: its backend ends."""
    connection.ensure_connection()
    with contextlib.suppress(Exception), connection.connection.cursor() as cursor:
        cursor.execute("SELECT pg_terminate_backend(pg_backend_pid())")


@pytest.mark.parametrize("read", sorted(READS))
def test_read_after_a_dropped_connection_reconnects(read: str) -> None:
    store = DjangoRunStore()
    store.commit([Finish(run("h", "a/1-0#1"), 1.0, "ok")])
    drop_connection()
    # The raw cursors raise the driver's own errors, the ORM Django's.
    with pytest.raises((DatabaseError, connection.Database.Error)):
        READS[read](store)
    assert READS[read](store) == ANSWERS[read]
