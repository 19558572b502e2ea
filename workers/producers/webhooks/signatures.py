"""Signature schemes: each checks the raw body against every configured secret.

Verification runs before the body is parsed. Every comparison is ``hmac.compare_digest``
(constant time), and every secret is tried, so the time taken does not say which one
nearly matched. Two secrets at once let a sender rotate without a failed delivery.
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Callable, Mapping, Sequence

from workers.core.errors import SignatureInvalid

STRIPE_TOLERANCE_S = 300
SLACK_TOLERANCE_S = 300

Headers = Mapping[str, str]


def hmac_sha256_hex(secret: str, message: bytes) -> str:
    return hmac.new(secret.encode(), message, hashlib.sha256).hexdigest()


def matches_any(secrets: Sequence[str], message: bytes, candidates: Sequence[str]) -> bool:
    """True if any candidate equals the HMAC of ``message`` under any secret."""
    # Bytes, not str: compare_digest refuses non-ASCII text, and a header may hold any.
    given = [c.strip().lower().encode("utf-8", "replace") for c in candidates]
    found = False
    for secret in secrets:
        expected = hmac_sha256_hex(secret, message).encode()
        for candidate in given:
            # No early return: every pair is compared.
            found |= hmac.compare_digest(expected, candidate)
    return found


def header(headers: Headers, name: str) -> str:
    value = headers.get(name.lower())
    if not value:
        raise SignatureInvalid(f"the {name} header is missing")
    return value


def verify_github(
    body: bytes, headers: Headers, secrets: Sequence[str], now_s: float, header_name: str
) -> None:
    """``X-Hub-Signature-256: sha256=<hex HMAC-SHA256 of the body>``."""
    value = header(headers, header_name or "X-Hub-Signature-256")
    scheme, _, digest = value.partition("=")
    if scheme != "sha256" or not matches_any(secrets, body, [digest]):
        raise SignatureInvalid("the signature does not match")


def verify_hmac(
    body: bytes, headers: Headers, secrets: Sequence[str], now_s: float, header_name: str
) -> None:
    """A hex HMAC-SHA256 of the body in a configurable header, ``sha256=`` prefix optional."""
    value = header(headers, header_name or "X-Signature")
    digest = value.removeprefix("sha256=")
    if not matches_any(secrets, body, [digest]):
        raise SignatureInvalid("the signature does not match")


def _timestamp(text: str, now_s: float, tolerance_s: int) -> int:
    try:
        stamp = int(text)
    except ValueError:
        raise SignatureInvalid("the signature timestamp is not an integer") from None
    if abs(now_s - stamp) > tolerance_s:
        raise SignatureInvalid(f"the signature timestamp is more than {tolerance_s} s away")
    return stamp


def verify_stripe(
    body: bytes, headers: Headers, secrets: Sequence[str], now_s: float, header_name: str
) -> None:
    """``Stripe-Signature: t=<unix s>,v1=<hex>[,v1=<hex>]`` over ``t.body``, 300 s window."""
    value = header(headers, header_name or "Stripe-Signature")
    pairs = [part.partition("=") for part in value.split(",")]
    stamps = [v for k, _, v in pairs if k.strip() == "t"]
    digests = [v for k, _, v in pairs if k.strip() == "v1"]
    if len(stamps) != 1 or not digests:
        raise SignatureInvalid("the signature header needs one t= and at least one v1=")
    stamp = _timestamp(stamps[0], now_s, STRIPE_TOLERANCE_S)
    if not matches_any(secrets, f"{stamp}.".encode() + body, digests):
        raise SignatureInvalid("the signature does not match")


def verify_slack(
    body: bytes, headers: Headers, secrets: Sequence[str], now_s: float, header_name: str
) -> None:
    """``X-Slack-Signature: v0=<hex>`` over ``v0:<X-Slack-Request-Timestamp>:body``."""
    value = header(headers, header_name or "X-Slack-Signature")
    stamp = _timestamp(header(headers, "X-Slack-Request-Timestamp"), now_s, SLACK_TOLERANCE_S)
    version, _, digest = value.partition("=")
    if version != "v0" or not matches_any(secrets, f"v0:{stamp}:".encode() + body, [digest]):
        raise SignatureInvalid("the signature does not match")


Verifier = Callable[[bytes, Headers, Sequence[str], float, str], None]

SCHEMES: dict[str, Verifier] = {
    "github": verify_github,
    "stripe": verify_stripe,
    "slack": verify_slack,
    "hmac": verify_hmac,
}
