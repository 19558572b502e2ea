"""The dashboard websocket: staff only; forwards the sampler's fragments this page shows."""

from __future__ import annotations

import json
from typing import Any

from channels.generic.websocket import AsyncWebsocketConsumer

from console import realtime, sampler

MAX_SUBSCRIPTIONS = 100


class DashboardConsumer(AsyncWebsocketConsumer):  # type: ignore[misc]
    subscriptions: frozenset[str] = frozenset()

    async def connect(self) -> None:
        user = self.scope.get("user")
        if user is None or not user.is_authenticated or not user.is_staff:
            # Closing before accept refuses the handshake (HTTP 403): nothing is ever sent.
            await self.close()
            return
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
            self.subscriptions = frozenset(str(n) for n in names[:MAX_SUBSCRIPTIONS])

    async def dashboard_tick(self, message: dict[str, Any]) -> None:
        fragments = message["fragments"]
        payload: realtime.TickPayload = {
            "at_ms": message["at_ms"],
            "fragments": {k: v for k, v in fragments.items() if k in self.subscriptions},
        }
        await self.send(text_data=json.dumps(payload))
