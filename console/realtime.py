"""What travels over the channel layer and the websocket: group names and message shapes."""

from __future__ import annotations

from typing import Literal, TypedDict

# Every console socket joins this channel-layer group; the sampler broadcasts to it.
DASHBOARD_GROUP = "dashboard"
TICK_TYPE = "dashboard.tick"


class TickMessage(TypedDict):
    """Channel layer -> consumer: one sampler tick, every live fragment already rendered."""

    type: Literal["dashboard.tick"]
    at_ms: int
    fragments: dict[str, str]


class TickPayload(TypedDict):
    """Consumer -> browser: the fragments this page shows, keyed by their ``data-live`` name."""

    at_ms: int
    fragments: dict[str, str]


class SubscribeMessage(TypedDict):
    """Browser -> consumer: the ``data-live`` names on the page."""

    subscribe: list[str]


def overview_key() -> str:
    return "overview"


def workers_key() -> str:
    return "workers"


def jobs_key() -> str:
    return "jobs"


def stream_key(stream: str) -> str:
    return f"stream:{stream}"


def group_key(stream: str, group: str) -> str:
    return f"group:{stream}:{group}"


OPERATOR_SUFFIX = "#operate"


def operator_variant(key: str) -> str:
    """The name of a fragment's variant with action buttons, sent to operators only."""
    return f"{key}{OPERATOR_SUFFIX}"


def is_operator_variant(name: str) -> bool:
    """Never a subscription name: a socket gets a variant only through its role."""
    return name.endswith(OPERATOR_SUFFIX)
