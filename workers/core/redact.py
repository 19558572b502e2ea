"""Credentials out of anything printed, logged or returned: URLs, ``key=value`` secrets and
the configured secret values themselves.

``REDIS_URL`` and ``DATABASE_URL`` carry passwords (``redis://user:pass@host``,
``?password=...``); every message that names a server goes through ``redact_url`` and the log
formatters run ``redact_text`` over each line as a safety net.

A secret can also reach a text with nothing around it that looks secret: an LLM endpoint that
echoes the API key in its 401, an agent that prints its settings. So the values themselves are
registered once, where the configuration is built (``register_secrets``), and ``redact_text``
masks each of them wherever it appears: in log lines, in error texts (``describe``), and so in
``AgentRun.error``, the timeline, dead letters and the pages that show them.
"""

from __future__ import annotations

import html
import json
import re
import threading
from urllib.parse import parse_qsl, quote, unquote

MASK = "***"
# A shorter value would mask ordinary words ("admin", "redis") in every text.
MIN_SECRET_LEN = 6
# Query parameters whose value is a credential (libpq's ``password=``/``sslpassword=``,
# tokens and keys in webhook or LLM URLs).
_SECRET_PARAM = re.compile(
    r"^(?:\w*pass(?:word|wd)?|pwd|\w*secret|\w*token|\w*api_?key|key|auth)$", re.IGNORECASE
)
_URL = re.compile(r"[A-Za-z][A-Za-z0-9+.\-]*://[^\s'\"<>]+")
# ``password=secret`` or ``api_key: 'secret'`` outside a URL (a libpq DSN, a repr). Narrower
# than the query names: log lines carry ``key=`` and ``token=`` fields that are not secrets.
_PAIR = re.compile(
    r"(?P<name>\b\w*(?:pass(?:word|wd)|pwd|secret(?:_key)?|api_?key|access_token|auth_token))"
    r"(?P<sep>\s*[=:]\s*)(?P<q>['\"]?)(?P<value>[^\s'\"&,;)}]+)",
    re.IGNORECASE,
)


def _redact_userinfo(authority: str) -> str:
    userinfo, at, host = authority.rpartition("@")
    if not at or ":" not in userinfo:
        return authority  # no password: a user name alone is not a secret
    user = userinfo.split(":", 1)[0]
    return f"{user}:{MASK}@{host}"


def _redact_query(query: str) -> str:
    pairs = parse_qsl(query, keep_blank_values=True)
    if not any(_SECRET_PARAM.match(name) for name, _ in pairs):
        return query
    return "&".join(
        f"{quote(name, safe='')}={MASK if _SECRET_PARAM.match(name) else quote(value, safe='')}"
        for name, value in pairs
    )


def redact_url(url: str) -> str:
    """``url`` with its password and secret query parameters replaced by ``***``.

    ``redis://default:pw@host:6379/0`` -> ``redis://default:***@host:6379/0``;
    ``postgres://u@h/db?password=pw`` -> ``postgres://u@h/db?password=***``. Anything that is
    not a URL comes back unchanged.
    """
    scheme, sep, rest = url.partition("://")
    if not sep:
        return url
    # The authority ends at the first "/" after the last "@" (before any query): a password
    # with an unescaped "/" is still a password.
    head = re.split(r"[?#]", rest, maxsplit=1)[0]
    start = head.rfind("@") + 1
    end = min((i for i in (rest.find(c, start) for c in "/?#") if i >= 0), default=len(rest))
    authority, tail = rest[:end], rest[end:]
    path, qmark, query = tail.partition("?")
    query, hashmark, fragment = query.partition("#")
    if qmark:
        query = _redact_query(query)
    return f"{scheme}://{_redact_userinfo(authority)}{path}{qmark}{query}{hashmark}{fragment}"


def _mask_pair(match: re.Match[str]) -> str:
    return f"{match['name']}{match['sep']}{match['q']}{MASK}"


class _Secrets:
    """Every registered secret value, as one pattern. Registration happens at start-up and
    per model client, reading on every log line and error text: readers take the pattern
    without the lock (one attribute read), writers rebuild it under the lock."""

    def __init__(self) -> None:
        self.values: frozenset[str] = frozenset()
        self.pattern: re.Pattern[str] | None = None
        self._lock = threading.Lock()

    def add(self, values: set[str]) -> None:
        with self._lock:
            merged = self.values | values
            if merged == self.values:
                return
            # Longest first: a secret that contains another is masked whole.
            ordered = sorted(merged, key=len, reverse=True)
            self.pattern = re.compile("|".join(map(re.escape, ordered)))
            self.values = merged


_SECRETS = _Secrets()


def _spellings(value: str) -> set[str]:
    """``value`` as the texts it may reach write it: itself, percent-encoded (a URL), escaped
    for JSON (a JSON log line is ASCII), for HTML (a page) and for a repr (a traceback)."""
    return {
        value,
        unquote(value),
        quote(value, safe=""),
        json.dumps(value)[1:-1],
        html.escape(value),
        repr(value)[1:-1],
    }


def register_secrets(*values: str | None) -> None:
    """Mask each of ``values`` in every text ``redact_text`` sees from now on, for the life of
    the process. Empty values and values shorter than ``MIN_SECRET_LEN`` are ignored."""
    fresh = {v for v in values if v and len(v) >= MIN_SECRET_LEN} - _SECRETS.values
    if fresh:
        _SECRETS.add({s for v in fresh for s in _spellings(v) if len(s) >= MIN_SECRET_LEN})


def mask_secrets(text: str) -> str:
    """``text`` with every registered secret value replaced by ``***``."""
    pattern = _SECRETS.pattern
    return text if pattern is None else pattern.sub(MASK, text)


def redact_text(text: str) -> str:
    """Every registered secret value masked, every URL in ``text`` redacted, and every
    ``password=...``-style pair masked."""
    text = mask_secrets(text)
    if "://" in text:
        text = _URL.sub(lambda m: redact_url(m.group(0)), text)
    return _PAIR.sub(_mask_pair, text)
