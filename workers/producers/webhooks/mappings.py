"""Raw JSON + headers -> the fields of a typed event, per sender.

A mapping picks the event type, the slim ``data`` its schema validates, the ``subject``,
the sender's delivery id (so a redelivery hashes the same) and some ``context``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from workers.core.errors import PayloadInvalid
from workers.producers.webhooks.config import WebhookSource
from workers.producers.webhooks.schemas import (
    ISSUE_ACTIONS,
    PULL_REQUEST_ACTIONS,
    SLACK_EVENT_TYPES,
)

Headers = Mapping[str, str]


@dataclass(frozen=True, slots=True)
class Mapped:
    type: str
    data: dict[str, Any]
    id: str | None = None
    subject: str | None = None
    context: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Challenge:
    """Slack's ``url_verification``: answer with the challenge, publish nothing."""

    challenge: str


def dig(payload: Any, *path: str) -> Any:
    """``payload[a][b]...`` or None; the schema then names the missing field."""
    for key in path:
        if not isinstance(payload, dict):
            return None
        payload = payload.get(key)
    return payload


def _object(payload: Any) -> dict[str, Any]:
    if not isinstance(payload, dict):
        raise PayloadInvalid(f"(root): the body is JSON {type(payload).__name__}, not an object")
    return payload


def _issue_fields(item: Any, action: Any) -> dict[str, Any]:
    labels = dig(item, "labels")
    return {
        "action": action,
        "number": dig(item, "number"),
        "title": dig(item, "title"),
        "state": dig(item, "state"),
        "url": dig(item, "html_url"),
        "author": dig(item, "user", "login"),
        "labels": [dig(label, "name") for label in labels] if isinstance(labels, list) else [],
        "body": dig(item, "body"),
    }


def _github_typed(name: str, payload: dict[str, Any]) -> tuple[str, dict[str, Any], str | None]:
    repo = dig(payload, "repository", "full_name")
    action = payload.get("action")
    if name == "issues" and action in ISSUE_ACTIONS:
        data = _issue_fields(payload.get("issue"), action)
        return f"github.issues.{action}", data, f"{repo}#{data['number']}"
    if name == "pull_request" and action in PULL_REQUEST_ACTIONS:
        pr = payload.get("pull_request")
        data = _issue_fields(pr, action)
        data |= {
            "merged": bool(dig(pr, "merged")),
            "head": dig(pr, "head", "ref"),
            "base": dig(pr, "base", "ref"),
        }
        return f"github.pull_request.{action}", data, f"{repo}#{data['number']}"
    if name == "push":
        commits = payload.get("commits")
        data = {
            "ref": payload.get("ref"),
            "before": payload.get("before"),
            "after": payload.get("after"),
            "commits": len(commits) if isinstance(commits, list) else 0,
            "head_commit": dig(payload, "head_commit", "id"),
        }
        return "github.push", data, f"{repo}@{data['ref']}"
    other = {"event": name, "action": action if isinstance(action, str) else None}
    return "github.event", other | {"payload": payload}, repo


def map_github(source: WebhookSource, payload: Any, headers: Headers) -> Mapped:
    name = headers.get("x-github-event")
    if not name:
        raise PayloadInvalid("X-GitHub-Event: the header is missing")
    body = _object(payload)
    event_type, data, subject = _github_typed(name, body)
    context = {
        "repository": dig(body, "repository", "full_name"),
        "sender": dig(body, "sender", "login"),
    }
    return Mapped(
        event_type,
        data,
        id=headers.get("x-github-delivery") or None,
        subject=subject if isinstance(subject, str) else None,
        context={k: v for k, v in context.items() if isinstance(v, str)},
    )


def map_slack(source: WebhookSource, payload: Any, headers: Headers) -> Mapped | Challenge:
    body = _object(payload)
    kind = body.get("type")
    if kind == "url_verification":
        challenge = body.get("challenge")
        if not isinstance(challenge, str):
            raise PayloadInvalid("challenge: a string is required")
        return Challenge(challenge)
    if kind != "event_callback":
        raise PayloadInvalid(f"type: unsupported Slack payload type {kind!r}")
    event = body.get("event")
    if not isinstance(event, dict):
        raise PayloadInvalid("event: an object is required")
    inner = event.get("type")
    data = {
        "team_id": body.get("team_id"),
        "type": inner,
        "user": event.get("user"),
        "channel": event.get("channel"),
        "text": event.get("text"),
        "ts": event.get("ts"),
        "event": event,
    }
    event_id = body.get("event_id")
    channel = event.get("channel")
    return Mapped(
        f"slack.{inner}" if inner in SLACK_EVENT_TYPES else "slack.event",
        data,
        id=event_id if isinstance(event_id, str) else None,
        subject=channel if isinstance(channel, str) else None,
        context={"team_id": body["team_id"]} if isinstance(body.get("team_id"), str) else {},
    )


def map_generic(source: WebhookSource, payload: Any, headers: Headers) -> Mapped:
    """The whole object as ``data`` under the source's ``event_type``."""
    delivery = headers.get(source.id_header.lower()) if source.id_header else None
    return Mapped(source.event_type, _object(payload), id=delivery or None)


def map_payload(source: WebhookSource, payload: Any, headers: Headers) -> Mapped | Challenge:
    if source.mapping == "github":
        return map_github(source, payload, headers)
    if source.mapping == "slack":
        return map_slack(source, payload, headers)
    return map_generic(source, payload, headers)
