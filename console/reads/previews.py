"""The dead-letter preview's guard: one preview at a time per user, across console processes.

A preview reads up to ``workers.operations.preview.PREVIEW_MAX_SCANNED`` letters (under a second); a
user who clicks again, or scripts the URL, waits for the first to end instead of stacking
reads that slow every page.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from contextlib import contextmanager

import redis

from workers.core.keys import Keys
from workers.core.lua import lua_script

# Longer than any bounded preview takes; only matters if a console process dies mid-preview.
PREVIEW_LOCK_MS = 60_000

RELEASE = lua_script(__package__, "preview_release")


class PreviewBusy(Exception):
    """This user's previous preview has not finished."""


@contextmanager
def preview_slot(client: redis.Redis, keys: Keys, user_id: int) -> Iterator[None]:
    key, token = keys.console_preview(user_id), uuid.uuid4().hex
    if not client.set(key, token, nx=True, px=PREVIEW_LOCK_MS):
        raise PreviewBusy
    try:
        yield
    finally:
        client.eval(RELEASE, 1, key, token)
