"""Who may scrape the metrics: a bearer token, client networks, or both. Pure, no I/O.

The console's ``GET /metrics`` and ``manage.py metrics`` both ask ``ScrapeAccess.check``. With
neither a token nor a network configured nothing may scrape, except loopback when the caller
allows it (the console with ``DEBUG`` on, the exporter bound to loopback): metrics name every
stream, group and event type, which is more than an anonymous visitor should learn.
"""

from __future__ import annotations

import hmac
import ipaddress
from collections.abc import Iterable
from dataclasses import dataclass

from workers.core.errors import ConfigurationError

Network = ipaddress.IPv4Network | ipaddress.IPv6Network
LOOPBACK: tuple[Network, ...] = (
    ipaddress.ip_network("127.0.0.0/8"),
    ipaddress.ip_network("::1/128"),
)
REALM = 'Bearer realm="streamdesk-metrics"'
NOT_CONFIGURED = (
    "metrics scraping is not configured: set STREAMDESK_METRICS_TOKEN (a bearer token) or "
    "STREAMDESK_METRICS_ALLOW (client networks) - see docs/observability.md"
)


@dataclass(frozen=True, slots=True)
class Refusal:
    """Why a scrape is refused: 401 asks for a token (with ``WWW-Authenticate``), 403 refuses
    the address whatever it sends."""

    status: int
    message: str
    challenge: str = ""


def parse_networks(items: Iterable[str]) -> tuple[Network, ...]:
    """CIDRs (or bare addresses) from settings; a typo is an error at start, not an open door."""
    out = []
    for item in items:
        try:
            out.append(ipaddress.ip_network(item.strip(), strict=False))
        except ValueError as exc:
            raise ConfigurationError(f"STREAMDESK_METRICS_ALLOW: {item!r} is no network") from exc
    return tuple(out)


@dataclass(frozen=True, slots=True)
class ScrapeAccess:
    token: str = ""
    allow: tuple[Network, ...] = ()
    # With neither token nor networks: may loopback scrape (DEBUG, or a loopback exporter)?
    open_loopback: bool = False

    @classmethod
    def from_settings(
        cls, token: str, allow: Iterable[str], *, open_loopback: bool
    ) -> ScrapeAccess:
        return cls(token.strip(), parse_networks(allow), open_loopback)

    @property
    def configured(self) -> bool:
        return bool(self.token or self.allow)

    def check(self, address: str, authorization: str) -> Refusal | None:
        """None when ``address`` (the peer's IP) with the ``Authorization`` header may scrape.
        Both settings set: both must pass."""
        if not self.configured:
            if self.open_loopback and _within(address, LOOPBACK):
                return None
            return Refusal(403, NOT_CONFIGURED)
        if self.allow and not _within(address, self.allow):
            return Refusal(403, f"{address or 'this address'} may not scrape the metrics")
        if self.token and not self._token_ok(authorization):
            why = "a bearer token is required" if not authorization else "invalid bearer token"
            return Refusal(401, why, REALM)
        return None

    def _token_ok(self, authorization: str) -> bool:
        scheme, _, sent = authorization.partition(" ")
        if scheme.lower() != "bearer":
            return False
        # Constant time: the comparison must not tell how much of a guess was right.
        return hmac.compare_digest(sent.strip().encode(), self.token.encode())


def _within(address: str, networks: tuple[Network, ...]) -> bool:
    try:
        ip = ipaddress.ip_address(address.split("%", 1)[0])
    except ValueError:
        return False
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped  # ::ffff:10.0.0.1 from a dual-stack socket is 10.0.0.1
    return any(ip in net for net in networks)
