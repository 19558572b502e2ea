"""The dashboard websocket: staff only; this page's fragments, in the variant the role allows."""

from __future__ import annotations

import json
from typing import Any

from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncWebsocketConsumer

from console import realtime, sampler
from console.roles import can_operate, can_view

MAX_SUBSCRIPTIONS = 100


class DashboardConsumer(AsyncWebsocketConsumer):  # type: ignore[misc]
    subscriptions: frozenset[str] = frozenset()
    operate = False

    async def connect(self) -> None:
        user = self.scope.get("user")
        # Permissions come from the database: not on the event loop.
        if not await database_sync_to_async(can_view)(user):
            # Closing before accept refuses the handshake (HTTP 403): nothing is ever sent.
            await self.close()
            return
        # Operators get the fragments' variants with action buttons.
        self.operate = await database_sync_to_async(can_operate)(user)
        await self.channel_layer.group_add(realtime.DASHBOARD_GROUP, self.channel_name)
        await self.accept()
        sampler.ensure_running()

    async def disconnect(self, code: int) -> None:
        await self.channel_layer.group_discard(realtime.DASHBOARD_GROUP, self.channel_name)

    async def receive(self, text_data: str | None = None, bytes_data: bytes | None = None) -> None:
        try:
            message = json.loads(text_data or "")
            names = message["subscribe"]
        except (ValueError, TypeError, KeyError):
            return  # not ours to answer: the page only ever sends a subscription
        if isinstance(names, list):
            # Public names only: a viewer who names an operator variant gets nothing for it.
            public = (str(n) for n in names[:MAX_SUBSCRIPTIONS])
            self.subscriptions = frozenset(n for n in public if not realtime.is_operator_variant(n))

    def _variant(self, fragments: dict[str, str], name: str) -> str:
        if self.operate:
            return fragments.get(realtime.operator_variant(name), fragments[name])
        return fragments[name]

    async def dashboard_tick(self, message: dict[str, Any]) -> None:
        fragments = message["fragments"]
        payload: realtime.TickPayload = {
            "at_ms": message["at_ms"],
            "fragments": {
                name: self._variant(fragments, name)
                for name in self.subscriptions
                if name in fragments
            },
        }
        await self.send(text_data=json.dumps(payload))
