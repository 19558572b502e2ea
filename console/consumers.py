"""The dashboard websocket: staff only; this page's fragments, in the variant the role allows."""

from __future__ import annotations

import json
import time
from importlib import import_module
from typing import Any

from channels.auth import get_user
from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncWebsocketConsumer
from django.conf import settings

from console import table_rows
from console.live import realtime, ticker
from console.live.tables import tables
from console.roles import can_operate, can_view

MAX_SUBSCRIPTIONS = 100
# How often an open socket re-reads its session and role: a sign-out, a deactivated user or a
# removed operate permission takes effect within this time, not at the next reconnect.
ROLE_RECHECK_S = 30.0
# Close code for a session that ended or lost its view permission (the page then asks the
# server whether it is still signed in, and says so).
SIGNED_OUT_CODE = 4403


def role(user: Any) -> tuple[bool, bool]:
    """(may view, may operate); reads permissions from the database, so never on the loop."""
    return can_view(user), can_operate(user)


class DashboardConsumer(AsyncWebsocketConsumer):  # type: ignore[misc]
    subscriptions: frozenset[str] = frozenset()
    operate = False
    checked_at = 0.0

    def __init__(self, *args: Any, recheck_s: float = ROLE_RECHECK_S, **kwargs: Any) -> None:
        # ``DashboardConsumer.as_asgi(recheck_s=...)``: channels passes it to each instance.
        super().__init__(*args, **kwargs)
        self.recheck_s = recheck_s

    async def connect(self) -> None:
        # Operators get the fragments' variants with action buttons.
        allowed: tuple[bool, bool] = await database_sync_to_async(role)(self.scope.get("user"))
        view, self.operate = allowed
        if not view:
            # Closing before accept refuses the handshake (HTTP 403): nothing is ever sent.
            await self.close()
            return
        self.checked_at = time.monotonic()
        await self.channel_layer.group_add(realtime.DASHBOARD_GROUP, self.channel_name)
        await self.accept()
        ticker.ensure_running()
        tables.ensure_running(table_rows.reader().read)

    async def disconnect(self, code: int) -> None:
        tables.forget(self)
        await self.channel_layer.group_discard(realtime.DASHBOARD_GROUP, self.channel_name)

    async def receive(self, text_data: str | None = None, bytes_data: bytes | None = None) -> None:
        try:
            message = json.loads(text_data or "")
            names = message["subscribe"]
        except (ValueError, TypeError, KeyError, RecursionError):
            return  # not ours to answer: the page only ever sends a subscription
        if isinstance(names, list):
            # Public names only: a viewer who names an operator variant gets nothing for it.
            public = (str(n) for n in names[:MAX_SUBSCRIPTIONS])
            self.subscriptions = frozenset(n for n in public if not realtime.is_operator_variant(n))
            # Live tables are read by this process for the sockets showing them.
            tables.watch(self, self.subscriptions)

    async def table_tick(self, name: str, variants: dict[bool, str], at_ms: int) -> None:
        """One live table (``console/live/tables.py``), in the variant the role allows."""
        payload: realtime.TickPayload = {
            "at_ms": at_ms,
            "fragments": {name: variants[self.operate]},
            "series": {},
        }
        await self.send(text_data=json.dumps(payload))

    def _variant(self, fragments: dict[str, str], name: str) -> str:
        if self.operate:
            return fragments.get(realtime.operator_variant(name), fragments[name])
        return fragments[name]

    async def still_allowed(self) -> bool:
        """Re-read the session and the role now; False once the user may no longer view."""
        self.checked_at = time.monotonic()
        key = getattr(self.scope.get("session"), "session_key", None)
        if not key:
            return False
        # A fresh store: the scope's copy was loaded at connect and never sees a sign-out.
        store = import_module(settings.SESSION_ENGINE).SessionStore(session_key=key)
        user = await get_user({"session": store})
        allowed: tuple[bool, bool] = await database_sync_to_async(role)(user)
        view, self.operate = allowed
        return view

    async def dashboard_tick(self, message: dict[str, Any]) -> None:
        if time.monotonic() - self.checked_at >= self.recheck_s and not await self.still_allowed():
            # Out of the group first: no tick reaches this socket while it closes.
            await self.channel_layer.group_discard(realtime.DASHBOARD_GROUP, self.channel_name)
            await self.close(code=SIGNED_OUT_CODE)
            return
        fragments = message["fragments"]
        series = message.get("series", {})
        payload: realtime.TickPayload = {
            "at_ms": message["at_ms"],
            "fragments": {
                name: self._variant(fragments, name)
                for name in self.subscriptions
                if name in fragments
            },
            # The charts of the parts this page shows (the overview's: every stream's).
            "series": {
                key: chart
                for name in self.subscriptions
                for key, chart in series.get(name, {}).items()
            },
        }
        await self.send(text_data=json.dumps(payload))
