"""The typed events webhooks become, registered schema-only so ``publish`` validates them.

An app replaces a placeholder with ``@agent("github.issues.opened", schema=GitHubIssue)``;
until then a worker runs a no-op for them (the run is recorded, nothing else happens).
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict

from workers.core.registry import Registry

ISSUE_ACTIONS = (
    "opened",
    "edited",
    "closed",
    "reopened",
    "labeled",
    "unlabeled",
    "assigned",
    "unassigned",
    "deleted",
)
PULL_REQUEST_ACTIONS = (
    "opened",
    "edited",
    "closed",
    "reopened",
    "synchronize",
    "ready_for_review",
    "labeled",
    "unlabeled",
)
SLACK_EVENT_TYPES = ("message", "app_mention", "reaction_added")


class GitHubIssue(BaseModel):
    action: str
    number: int
    title: str
    state: str
    url: str
    author: str | None = None
    labels: list[str] = []
    body: str | None = None


class GitHubPullRequest(GitHubIssue):
    merged: bool = False
    head: str
    base: str


class GitHubPush(BaseModel):
    ref: str
    before: str
    after: str
    commits: int
    head_commit: str | None = None


class GitHubOther(BaseModel):
    """Any other GitHub event (``ping``, ``release``...): its name and the whole payload."""

    event: str
    action: str | None = None
    payload: dict[str, Any]


class SlackEvent(BaseModel):
    team_id: str
    type: str
    user: str | None = None
    channel: str | None = None
    text: str | None = None
    ts: str | None = None
    event: dict[str, Any]


class AnyJson(BaseModel):
    """The generic mapping's default: any JSON object."""

    model_config = ConfigDict(extra="allow")


def builtin_types() -> dict[str, type[BaseModel]]:
    types: dict[str, type[BaseModel]] = {f"github.issues.{a}": GitHubIssue for a in ISSUE_ACTIONS}
    types |= {f"github.pull_request.{a}": GitHubPullRequest for a in PULL_REQUEST_ACTIONS}
    types |= {"github.push": GitHubPush, "github.event": GitHubOther}
    types |= {f"slack.{t}": SlackEvent for t in (*SLACK_EVENT_TYPES, "event")}
    return types


def register_webhook_types(registry: Registry) -> None:
    for event_type, schema in builtin_types().items():
        registry.register_schema(event_type, schema)
