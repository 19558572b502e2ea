"""API tokens: ``sd_`` and 43 random characters, shown once; only the SHA-256 is stored.

The console's API looks a bearer token up by ``hash_token``; ``manage.py apitoken`` creates,
lists and revokes them (each change audited).
"""

from __future__ import annotations

import hashlib
import secrets

from django.contrib.auth import get_user_model

from workers.core.errors import InvalidAction
from workers.models import ApiToken
from workers.store.audit import Action, Actor, Entry, Result

TOKEN_PREFIX = "sd_"
# Characters kept in clear (``ApiToken.prefix``) to recognise a token in a list.
SHOWN_CHARS = 8


def hash_token(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def new_token() -> tuple[str, str, str]:
    """``(token, key_hash, prefix)``."""
    token = TOKEN_PREFIX + secrets.token_urlsafe(32)
    return token, hash_token(token), token[:SHOWN_CHARS]


def create(actor: Actor, username: str, name: str) -> tuple[str, ApiToken]:
    """A new token for ``username``; the token itself is returned here and never again."""
    name = name.strip()
    if not name:
        raise InvalidAction("name", "a token needs a name (what uses it)")
    user = get_user_model().objects.filter(username=username).first()
    if user is None:
        raise InvalidAction("username", f"no user {username!r}")
    token, key_hash, prefix = new_token()
    row = ApiToken.objects.create(user=user, name=name, key_hash=key_hash, prefix=prefix)
    target = {"user": username, "name": name, "prefix": prefix}
    Entry(actor, Action.TOKEN_CREATE, target=target, count=1).write(Result.OK)
    return token, row


def revoke(actor: Actor, prefix: str) -> ApiToken:
    """Delete the one token whose prefix is ``prefix``."""
    found = list(ApiToken.objects.select_related("user").filter(prefix=prefix.strip()))
    if not found:
        raise InvalidAction("prefix", f"no token starts with {prefix!r}")
    if len(found) > 1:
        names = ", ".join(f"{t.name} ({t.user})" for t in found)
        raise InvalidAction("prefix", f"{prefix!r} is shared by {names}: revoke in the admin")
    token = found[0]
    token.delete()
    target = {"user": token.user.get_username(), "name": token.name, "prefix": token.prefix}
    Entry(actor, Action.TOKEN_REVOKE, target=target, count=1).write(Result.OK)
    return token


def listing() -> list[ApiToken]:
    return list(ApiToken.objects.select_related("user").order_by("user__username", "created_at"))
