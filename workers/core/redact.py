"""Credentials out of anything printed, logged or returned: URLs and ``key=value`` secrets.

``REDIS_URL`` and ``DATABASE_URL`` carry passwords (``redis://user:pass@host``,
``?password=...``); every message that names a server goes through ``redact_url`` and the log
formatters run ``redact_text`` over each line as a safety net.
"""

from __future__ import annotations

import re
from urllib.parse import parse_qsl, quote

MASK = "***"
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


def redact_text(text: str) -> str:
    """Every URL in ``text`` redacted, and every ``password=...``-style pair masked."""
    if "://" in text:
        text = _URL.sub(lambda m: redact_url(m.group(0)), text)
    return _PAIR.sub(_mask_pair, text)
