"""The console's Replay: its form, and the calls behind its preview and its start."""

from __future__ import annotations

from typing import Any

from django import forms

from console.runtime import redis_client
from workers import replay
from workers.core.registry import default_registry
from workers.from_settings import engine_config, stream_partitions
from workers.operations import ActionOutcome, Actor

BOUND_HELP = "an entry id (<ms>-<seq>) or an ISO 8601 time, UTC unless it says; empty: "


def agent_choices() -> list[tuple[str, str]]:
    """Every agent by the name ``--agent`` takes, with its type when the name is not it."""
    specs = sorted((s for s in default_registry if not s.placeholder), key=lambda s: s.name)
    return [(s.name, s.name if not s.agent else f"{s.name} ({s.type})") for s in specs]


class ReplayForm(forms.Form):
    agent = forms.ChoiceField(choices=())
    start = forms.CharField(required=False, max_length=64, label="From", help_text=BOUND_HELP)
    end = forms.CharField(required=False, max_length=64, label="To", help_text=BOUND_HELP)
    event_type = forms.CharField(required=False, max_length=256, label="Type")
    subject = forms.CharField(required=False, max_length=256)
    force = forms.BooleanField(required=False)
    reason = forms.CharField(required=False, max_length=2000)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # Read when a form is made, not at import: agents register as the apps load.
        self.fields["agent"].choices = agent_choices()  # type: ignore[attr-defined]


def plan_of(data: dict[str, Any]) -> replay.Replay:
    """The replay a valid form asks for, on the engine's stream; ``InvalidAction`` for a
    bad bound, a type that is not the agent's..."""
    config = engine_config()
    return replay.plan(
        default_registry,
        config.group,
        data["agent"],
        stream_partitions(config.stream),
        start=data["start"],
        end=data["end"],
        event_type=data["event_type"],
        subject=data["subject"],
        force=data["force"],
    )


def preview(data: dict[str, Any]) -> tuple[replay.Replay, replay.ReplayPreview]:
    """Read only: nothing is written, not even an audit record (a GET)."""
    plan = plan_of(data)
    return plan, replay.checked_preview(redis_client(), plan)


def start(who: Actor, data: dict[str, Any]) -> ActionOutcome:
    """Queue the replay's job (the console's job runner works it) and audit it."""
    return replay.replay(who, plan_of(data), reason=data["reason"], client=redis_client())
