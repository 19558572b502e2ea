"""Each pytest-xdist process on a server of its own, or a db number of its own."""

from __future__ import annotations

import os
from urllib.parse import urlsplit, urlunsplit

# Redis's default ``databases 16``.
DATABASES = 16


def own_db(url: str) -> str:
    """``url`` for this process: db n + k on xdist process gw<k>; unchanged outside xdist
    or without a URL (each process then starts a Valkey of its own)."""
    worker = os.environ.get("PYTEST_XDIST_WORKER", "")
    if not url or not worker.startswith("gw"):
        return url
    parts = urlsplit(url)
    db = int(parts.path.strip("/") or 0) + int(worker[2:])
    if db >= DATABASES:
        raise SystemExit(f"REDIS_URL's db number plus {worker} is {db}: run fewer processes (-n)")
    return urlunsplit(parts._replace(path=f"/{db}"))
