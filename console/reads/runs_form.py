"""The Runs page's query string (and ``/api/runs/``'s), checked before the database sees it."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlencode

from django import forms
from django.core.exceptions import ValidationError

from console.reads.runs import BadCursor, Cursor, RunFilter
from workers.core.registry import default_registry
from workers.models import AgentRun, RunStatus

# The model's column widths: a longer value matches nothing, so it is refused as a typo.
NAME_CHARS = 256
ERROR_TEXT_CHARS = 200
FILTERS = ("type", "agent", "version", "status", "subject", "created_from", "created_to", "error")
VERSION_CHARS = 64
# ``<input type="datetime-local">`` sends minutes, or seconds when it has them.
MOMENT_FORMATS = ["%Y-%m-%dT%H:%M", "%Y-%m-%dT%H:%M:%S", "%Y-%m-%d %H:%M", "%Y-%m-%d"]


def _moment(label: str) -> forms.DateTimeField:
    return forms.DateTimeField(
        required=False,
        label=label,
        input_formats=MOMENT_FORMATS,
        widget=forms.DateTimeInput(attrs={"type": "datetime-local"}, format="%Y-%m-%dT%H:%M"),
        error_messages={"invalid": "Enter a date and time, e.g. 2026-12-06T14:30 (UTC)."},
    )


class RunsForm(forms.Form):
    """Blank fields do not filter. ``older`` and ``newer`` are page cursors (one at most)."""

    type = forms.CharField(required=False, max_length=NAME_CHARS, label="Event type")
    # After the type: a filtered page's URL keeps its shape (``?type=...&``) for bookmarks.
    agent = forms.CharField(required=False, max_length=NAME_CHARS, label="Agent")
    version = forms.CharField(required=False, max_length=VERSION_CHARS, label="Version")
    status = forms.ChoiceField(
        required=False, choices=[("", "any"), *RunStatus.choices], label="Status"
    )
    subject = forms.CharField(required=False, max_length=NAME_CHARS, label="Subject")
    created_from = _moment("Created from (UTC)")
    created_to = _moment("Created before (UTC)")
    error = forms.CharField(required=False, max_length=ERROR_TEXT_CHARS, label="Error contains")
    older = forms.CharField(required=False, max_length=40, widget=forms.HiddenInput)
    newer = forms.CharField(required=False, max_length=40, widget=forms.HiddenInput)

    def _cursor(self, name: str) -> Cursor | None:
        raw = self.cleaned_data.get(name) or ""
        if not raw:
            return None
        try:
            return Cursor.decode(raw)
        except BadCursor as exc:
            raise ValidationError(str(exc), code="cursor") from exc

    def clean_older(self) -> Cursor | None:
        return self._cursor("older")

    def clean_newer(self) -> Cursor | None:
        return self._cursor("newer")

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        start, end = data.get("created_from"), data.get("created_to")
        if start and end and start >= end:
            raise ValidationError("“Created from” must be earlier than “Created before”.")
        if data.get("older") and data.get("newer"):
            raise ValidationError("A page is older or newer than one cursor, not both.")
        return data

    def run_filter(self) -> RunFilter:
        data = self.cleaned_data
        named, home_of = agent_filter(data["agent"].strip())
        return RunFilter(
            agent=named,
            home_of=home_of,
            version=data["version"].strip(),
            event_type=data["type"].strip(),
            status=data["status"],
            subject=data["subject"].strip(),
            created_from=data["created_from"],
            created_to=data["created_to"],
            error=data["error"].strip(),
        )

    def filter_query(self) -> str:
        """The filters as a query string (no cursor): the pager's links add theirs."""
        return urlencode({name: self.data[name] for name in FILTERS if self.data.get(name)})


def agent_filter(name: str) -> tuple[str, str]:
    """An agent's name as the filter it means: ``(name, "")`` for a named agent, ``("",
    type)`` for a type's agent without a name (``runworker --agent`` names it by its type;
    names and types never clash). The registry says which, else the runs (one index probe)."""
    if not name:
        return "", ""
    spec = default_registry.by_name(name)
    if spec is not None:
        return (spec.agent, "") if spec.agent else ("", spec.type)
    return (name, "") if AgentRun.objects.filter(agent=name).exists() else ("", name)
