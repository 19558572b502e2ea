"""``POST /hooks/<source>/``: a signed webhook, verified, mapped and published.

The answer comes after XADD has returned (202 with the event id and the entry id), or says
why nothing was published: 200 a replay of a body already published inside the window,
404 unknown source, 415 not JSON, 413 too large, 401 signature, 400 body or schema (naming
the field, or a body that can never be stored, such as one with a lone surrogate escape: a
4xx so the sender stops retrying it), 503 Redis down or, for a ``durable`` source, no
replica confirmed the event in time (the sender retries; the cause goes to the log, not to
it).
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import Any

import redis
from django.conf import settings
from django.http import HttpRequest, JsonResponse
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_POST

from console.runtime import redis_client
from workers.core import keys, tracing
from workers.core.errors import (
    EventError,
    NotReplicated,
    PayloadInvalid,
    RedisUnavailable,
    SignatureInvalid,
)
from workers.core.events import Envelope, event_hash
from workers.core.redact import redact_text
from workers.core.registry import default_registry
from workers.from_settings import partitions
from workers.producers.webhooks.config import WebhookSource, parse_sources
from workers.producers.webhooks.intake import envelope_for, register_types
from workers.producers.webhooks.mappings import Challenge
from workers.producers.webhooks.replay import OncePublisher, Published, body_digest
from workers.redis.replication import Durability

READ_CHUNK_BYTES = 64 * 1024
RETRY_AFTER_S = 5

log = logging.getLogger("streamdesk.webhooks")

_sources: dict[int, dict[str, WebhookSource]] = {}
_publishers: dict[tuple[str, int], OncePublisher] = {}


def webhook_sources() -> dict[str, WebhookSource]:
    """Parsed once per settings object (tests swap the setting), types registered."""
    raw = settings.STREAMDESK_WEBHOOKS
    key = id(raw)
    if key not in _sources:
        sources = parse_sources(raw)
        register_types(default_registry, sources.values())
        tracing.configure()  # the console's first webhook: the standard OTEL_* variables
        _sources.clear()
        _sources[key] = sources
    return _sources[key]


def refused(status: int, error: str, **extra: Any) -> JsonResponse:
    response = JsonResponse({"error": error}, status=status)
    for name, value in extra.items():
        response[name.replace("_", "-")] = str(value)
    return response


def read_limited(request: HttpRequest, max_bytes: int) -> bytes | None:
    """The body, or None as soon as it passes ``max_bytes``; never more than one chunk
    beyond the limit is read (the ASGI guard in front has usually refused it already)."""
    chunks: list[bytes] = []
    size = 0
    while chunk := request.read(min(READ_CHUNK_BYTES, max_bytes + 1 - size)):
        chunks.append(chunk)
        size += len(chunk)
        if size > max_bytes:
            return None
    return b"".join(chunks)


def publisher() -> OncePublisher:
    prefix = str(settings.STREAMDESK.get("prefix", keys.DEFAULT_PREFIX))
    window_s = int(settings.STREAMDESK_WEBHOOK_REPLAY_WINDOW_S)
    if (prefix, window_s) not in _publishers:
        _publishers[(prefix, window_s)] = OncePublisher(keys.Keys(prefix), window_s)
    return _publishers[(prefix, window_s)]


def publish_once(source: WebhookSource, envelope: Envelope, body: bytes) -> Published:
    """XADD unless the same body was published inside the replay window; with tracing on,
    the envelope carries its producer span's context (the intake span's child)."""
    # Partitioned: by subject, else by the body, so a replayed body meets its first copy's
    # record in the same partition (a new delivery may carry a new event id).
    by = envelope.subject or body_digest(source.name, body)
    stream = partitions(source.stream).stream_for(by)
    with tracing.sending(source.stream, [envelope]) as sending:
        done = publisher().publish(
            redis_client(),
            stream,
            sending.envelopes[0],
            source=source.name,
            body=body,
            durability=Durability() if source.durable else None,
        )
        sending.sent([done.entry_id])
        return done


def unpublishable(envelope: Envelope) -> str | None:
    """Why a verified envelope can never be stored, None when it can. Checked before any
    write, so such a body is refused whole (never half-published) with a 4xx: a 5xx had
    senders retry it for days. JSON allows ``"\\ud800"``; no UTF-8 text can hold it."""
    try:
        envelope.to_json()
        event_hash(envelope)
    except ValueError as exc:  # UnicodeEncodeError, pydantic's serialization error
        return f"the payload can never be stored as an event: {exc}"
    return None


def published(source: WebhookSource, envelope: Envelope, done: Published) -> JsonResponse:
    answer = {"id": envelope.id, "entry_id": done.entry_id, "hash": done.hash}
    if not done.duplicate:
        return JsonResponse(answer, status=202)
    # 2xx, so the sender stops retrying; nothing new is in the stream.
    log.info(
        "webhook %s: delivery %s repeats a body published as %s inside the replay window; "
        "not published again",
        source.name,
        envelope.id,
        done.entry_id,
    )
    return JsonResponse({**answer, "duplicate": True}, status=200)


@csrf_exempt
@require_POST
async def receive_webhook(request: HttpRequest, source: str) -> JsonResponse:
    sources = webhook_sources()
    if not tracing.ACTIVE:
        return await _receive(request, sources, source)
    headers = {name.lower(): value for name, value in request.headers.items()}
    attributes = {"http.request.method": "POST", "http.route": "/hooks/<source>/"}
    with tracing.server_span(f"webhook {source}", headers, attributes) as span:
        response = await _receive(request, sources, source)
        span.set_attribute("http.response.status_code", response.status_code)
        return response


async def _receive(
    request: HttpRequest, sources: dict[str, WebhookSource], source: str
) -> JsonResponse:
    found = sources.get(source)
    if found is None:
        return refused(404, f"no webhook source named {source!r}")
    if request.content_type != "application/json":
        return refused(415, "the body must be application/json")
    max_bytes = settings.STREAMDESK_WEBHOOK_MAX_BYTES
    body = read_limited(request, max_bytes)
    if body is None:
        return refused(413, f"the body is over {max_bytes} bytes")
    headers = {name.lower(): value for name, value in request.headers.items()}
    try:
        result = envelope_for(
            found,
            body,
            headers,
            now_s=time.time(),
            registry=default_registry,
            max_depth=settings.STREAMDESK_WEBHOOK_MAX_DEPTH,
        )
    except SignatureInvalid as exc:
        return refused(401, str(exc))
    except (PayloadInvalid, EventError) as exc:
        return refused(400, str(exc))
    if isinstance(result, Challenge):
        return JsonResponse({"challenge": result.challenge})
    why = unpublishable(result)
    if why is not None:
        log.warning("webhook %s: a delivery refused: %s", source, why)
        return refused(400, why)
    try:
        done = await asyncio.to_thread(publish_once, found, result, body)
    except NotReplicated as exc:
        # On the primary, not yet on a replica: the sender's retry finds this copy.
        log.error("webhook %s: not confirmed durable: %s", source, exc)
        return refused(503, "the event could not be stored; retry later", Retry_After=RETRY_AFTER_S)
    except (RedisUnavailable, redis.RedisError) as exc:
        # The sender is outside: it learns to retry, never the server's address or password.
        log.error("webhook %s: not published: %s", source, redact_text(str(exc)))
        return refused(503, "the event could not be stored; retry later", Retry_After=RETRY_AFTER_S)
    return published(found, result, done)
