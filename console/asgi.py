"""ASGI entry point for daphne: Django over HTTP, the live dashboard over websockets."""

from __future__ import annotations

import asyncio
import gc
import os
from typing import Any

from django.core.asgi import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "console.settings")
# Django must be set up before anything imports models (the auth middleware does).
django_asgi_app = get_asgi_application()

from channels.auth import AuthMiddlewareStack  # noqa: E402
from channels.routing import ProtocolTypeRouter, URLRouter  # noqa: E402
from django.conf import settings  # noqa: E402
from django.contrib.staticfiles.handlers import ASGIStaticFilesHandler  # noqa: E402

from console.edge import daphne_limit  # noqa: E402
from console.edge.body_limit import BodyLimits, LimitRequestBodies  # noqa: E402
from console.edge.ws_origin import SameOriginValidator  # noqa: E402
from console.live import background  # noqa: E402
from console.routing import websocket_urlpatterns  # noqa: E402
from console.runtime import keys, redis_client  # noqa: E402
from workers.monitor.recorder import start_recorder  # noqa: E402

# In development daphne serves /static/ itself; in production run collectstatic and let the
# proxy (or STREAMDESK_SERVE_STATIC=1) serve them.
http_app = (
    ASGIStaticFilesHandler(django_asgi_app)
    if settings.DEBUG or os.environ.get("STREAMDESK_SERVE_STATIC") == "1"
    else django_asgi_app
)


# Every request body is limited while it arrives, in daphne's parser and again in front of
# Django (console/edge/body_limit.py).
body_limits = BodyLimits(
    webhook_bytes=settings.STREAMDESK_WEBHOOK_MAX_BYTES,
    default_bytes=settings.STREAMDESK_MAX_REQUEST_BYTES,
)
daphne_limit.install(body_limits)


class StartsJobRunner:
    """Starts the bulk-job runner with the first request of any kind (a health check will
    do), so a restarted console resumes its jobs without waiting for a browser."""

    def __init__(self, app: Any) -> None:
        self.app = app
        self.started = False

    async def __call__(self, scope: Any, receive: Any, send: Any) -> Any:
        if not self.started:
            self.started = True
            await asyncio.to_thread(background.ensure_job_runner)
        return await self.app(scope, receive, send)


application = ProtocolTypeRouter(
    {
        "http": StartsJobRunner(LimitRequestBodies(http_app, body_limits)),
        # The page's exact origin (scheme, host, port): not channels' host-only check.
        "websocket": SameOriginValidator(AuthMiddlewareStack(URLRouter(websocket_urlpatterns))),
    }
)

# A candidate history recorder from the process's start, not from the first browser: a
# console without workers still records (workers/monitor/recorder.py; one process records).
if settings.STREAMDESK_HISTORY_RECORDER:
    start_recorder(redis_client, keys(), "console")

# Start-up objects (Django, templates, URL patterns) never die: keep them out of the
# collector's full passes, which otherwise add 60-90 ms to an occasional page or tick.
gc.collect()
gc.freeze()
