"""Leaked-credential remediation as a small explicit state machine.

Each state has one transition, run as a durable step named after the state: a worker that
dies after revoking resumes at "revoked" on redelivery, so the key is revoked and the owner
told exactly once, and the downstream calls carry the step's idempotency key anyway.

    received --find_owner--> owner_found --revoke--> revoked --notify--> notified
         \\--(no owner)--> unowned --revoke--> revoked ...  (escalated to #security)
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from enum import StrEnum
from typing import Any, Literal

from pydantic import BaseModel

from workers.core.events import Event
from workers.core.registry import agent
from workers.examples.sandbox import services
from workers.runtime.context import AgentContext

SECURITY_CHANNEL = "#security"


class CredentialLeaked(BaseModel):
    alert_id: str
    credential_id: str
    kind: Literal["aws_access_key", "github_token", "slack_token", "database_password"]
    repository: str
    file_path: str
    commit: str
    detected_at: datetime


class State(StrEnum):
    RECEIVED = "received"
    OWNER_FOUND = "owner_found"
    UNOWNED = "unowned"
    REVOKED = "revoked"
    NOTIFIED = "notified"


# What each transition gets: the alert, what earlier ones learned, the step's key.
Transition = Callable[[CredentialLeaked, dict[str, Any], str], dict[str, Any]]


def find_owner(alert: CredentialLeaked, memory: dict[str, Any], key: str) -> dict[str, Any]:
    owner = services.lookup_owner(alert.repository)
    if owner is None:
        return {"next": State.UNOWNED, "owner": None, "channel": SECURITY_CHANNEL}
    return {"next": State.OWNER_FOUND, "owner": owner["owner"], "channel": owner["channel"]}


def revoke(alert: CredentialLeaked, memory: dict[str, Any], key: str) -> dict[str, Any]:
    receipt = services.revoke(alert.credential_id, alert.kind, key)
    return {"next": State.REVOKED, "revocation": receipt["id"]}


def notify(alert: CredentialLeaked, memory: dict[str, Any], key: str) -> dict[str, Any]:
    who = f"@{memory['owner']}" if memory["owner"] else "nobody owns this repository:"
    text = (
        f"{who} a {alert.kind} leaked in {alert.repository}/{alert.file_path} "
        f"({alert.commit[:8]}) was revoked. Rotate it where it is used. Alert {alert.alert_id}."
    )
    receipt = services.notify(memory["channel"], text, key)
    return {"next": State.NOTIFIED, "message": receipt["id"]}


TRANSITIONS: dict[State, Transition] = {
    State.RECEIVED: find_owner,
    State.OWNER_FOUND: revoke,
    State.UNOWNED: revoke,
    State.REVOKED: notify,
}


@agent("security.credential_leaked", schema=CredentialLeaked)
async def remediate(event: Event[CredentialLeaked], ctx: AgentContext) -> dict[str, Any]:
    """Look up the owner, revoke the credential, tell the owner (or #security)."""
    state, memory = State.RECEIVED, dict[str, Any]()
    path: list[str] = [state]
    while state in TRANSITIONS:
        transition = TRANSITIONS[state]
        out = await ctx.step(
            f"{state}:{transition.__name__}",
            transition,
            event.data,
            memory,
            ctx.idempotency_key(transition.__name__),
        )
        state = State(out.pop("next"))
        memory.update(out)
        path.append(state)
    return {"state": state, "path": path, **memory}
