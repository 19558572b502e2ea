"""Signing webhook bodies the way each sender does, for the tests."""

from __future__ import annotations

import hashlib
import hmac


def hex_hmac(secret: str, message: bytes) -> str:
    return hmac.new(secret.encode(), message, hashlib.sha256).hexdigest()


def github_headers(secret: str, body: bytes, event: str, delivery: str) -> dict[str, str]:
    return {
        "X-Hub-Signature-256": f"sha256={hex_hmac(secret, body)}",
        "X-GitHub-Event": event,
        "X-GitHub-Delivery": delivery,
    }


def stripe_headers(secret: str, body: bytes, at_s: int) -> dict[str, str]:
    digest = hex_hmac(secret, f"{at_s}.".encode() + body)
    return {"Stripe-Signature": f"t={at_s},v1={digest}"}


def slack_headers(secret: str, body: bytes, at_s: int) -> dict[str, str]:
    digest = hex_hmac(secret, f"v0:{at_s}:".encode() + body)
    return {"X-Slack-Signature": f"v0={digest}", "X-Slack-Request-Timestamp": str(at_s)}


def hmac_headers(secret: str, body: bytes, header: str = "X-Signature") -> dict[str, str]:
    return {header: hex_hmac(secret, body)}
