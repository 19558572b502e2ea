"""The names Streamdesk's Redis connections give themselves (``CLIENT SETNAME``, sent by
redis-py when a connection opens), so the server's ``CLIENT LIST`` tells a worker's
connections from the console's and from everyone else's."""

from __future__ import annotations

import re

# Every connection a ``runworker`` process opens: the engine's, its pub/sub listener's, its
# history recorder's. The console counts the fleet's cost by this prefix.
WORKER = "streamdesk-worker"
# Every connection the console opens through the engine's shared client.
CONSOLE = "streamdesk-console"
# CLIENT SETNAME refuses spaces, newlines and anything outside printable ASCII ('!'..'~').
_REFUSED = re.compile(r"[^!-~]")
# A consumer name may be long; the connection's name only has to tell workers apart.
MAX_DETAIL = 100


def client_name(role: str, detail: str = "") -> str:
    """``role`` or ``role:detail``, with each character CLIENT SETNAME refuses as '_'."""
    if not detail:
        return role
    return f"{role}:{_REFUSED.sub('_', detail[:MAX_DETAIL])}"


def worker_client_name(consumer: str) -> str:
    """The name of a worker's engine connections: ``streamdesk-worker:<consumer>``."""
    return client_name(WORKER, consumer)


def is_worker(name: str) -> bool:
    """Whether a connection named ``name`` is one a ``runworker`` opened."""
    return name == WORKER or name.startswith(f"{WORKER}:")
