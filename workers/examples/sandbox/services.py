"""The sandbox services' APIs: synchronous, rate-limited, idempotent by key.

Each call takes a token from its service's shared budget (``STREAMDESK_RATE_LIMITS``), so
the example agents show deferral when they outrun it. Call them inside ``ctx.step`` (they
are sync: the step runs them in a worker thread) with ``ctx.idempotency_key(step)``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from django.db import close_old_connections, transaction

from workers.examples.sandbox.models import SideEffect
from workers.runtime.context import rate_limited

# The directory's answer: which team owns a repository, and where to reach it.
OWNERS = {
    "acme/payments": {"team": "payments", "owner": "dana", "channel": "#payments-oncall"},
    "acme/web": {"team": "web", "owner": "lee", "channel": "#web"},
    "acme/infra": {"team": "platform", "owner": "sam", "channel": "#platform-oncall"},
}


def _record(
    service: str, action: str, target: str, payload: dict[str, Any], key: str
) -> dict[str, Any]:
    """Insert the effect once per key; a repeat answers the first call's effect."""
    try:
        with transaction.atomic():
            effect, created = SideEffect.objects.get_or_create(
                idempotency_key=key,
                defaults={
                    "service": service,
                    "action": action,
                    "target": target,
                    "payload": payload,
                },
            )
            if not created:
                SideEffect.objects.filter(pk=effect.pk).update(replays=effect.replays + 1)
        return {"id": effect.pk, "replayed": not created, **effect.payload}
    finally:
        close_old_connections()  # agent threads outlive requests: honour CONN_MAX_AGE


@rate_limited("github")
def label_issue(repository: str, number: int, labels: Sequence[str], key: str) -> dict[str, Any]:
    target = f"{repository}#{number}"
    return _record("github", "label_issue", target, {"labels": list(labels)}, key)


@rate_limited("directory")
def lookup_owner(repository: str) -> dict[str, str] | None:
    return OWNERS.get(repository)


@rate_limited("vault")
def revoke(credential_id: str, kind: str, key: str) -> dict[str, Any]:
    return _record("vault", "revoke", credential_id, {"kind": kind, "revoked": True}, key)


@rate_limited("slack")
def notify(channel: str, text: str, key: str) -> dict[str, Any]:
    return _record("slack", "notify", channel, {"text": text}, key)


# Not rate-limited: a refund is rare, and the refunds example is about waiting for a person.
def refund(order_id: str, amount_cents: int, key: str) -> dict[str, Any]:
    payload = {"amount_cents": amount_cents, "refunded": True}
    return _record("payments", "refund", f"order/{order_id}", payload, key)
