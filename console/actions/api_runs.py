"""``/api/runs/``: the Runs page's rows as JSON (console/reads/runs.py), with the page's
filters and keyset cursors, in the manner of ``api.py`` (its authentication and roles).
``console/urls.py`` mounts it under ``/api/``."""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest, JsonResponse
from django.urls import path, reverse

from console.actions.api import _form_errors, _unknown_fields, api_view
from console.reads import runs
from console.reads.runs_form import RunsForm
from workers.core.storable import exception_line
from workers.models import AgentRun


def _run(run: AgentRun) -> dict[str, Any]:
    return {
        "event_hash": run.event_hash,
        "event_type": run.event_type,
        "subject": run.subject,
        "status": run.status,
        "attempts": run.attempts,
        "created_at": run.created_at.isoformat(),
        "duration_ms": run.duration_ms,
        "version": run.version,
        # Which agent ran it ("": its type's agent without a name), the event's own hash
        # ("" on rows from before agents had names: event_hash is it) and the run a forced
        # replay repeats ("" for a first run).
        "agent": run.agent,
        "event_key": run.event_key,
        "replay_of": run.replay_of,
        "prompt_tokens": run.prompt_tokens,
        "completion_tokens": run.completion_tokens,
        "cost_usd": run.cost_usd,
        "error": exception_line(run.error),  # as the page shows it
        "url": reverse("event_by_hash", args=[run.event_hash]),
    }


@api_view(operate=False)
def run_list(request: HttpRequest) -> JsonResponse:
    """The page's query string: ``agent``, ``version``, ``type``, ``status``, ``subject``,
    ``created_from``, ``created_to``, ``error``, and one of ``older`` / ``newer`` (cursors
    it answered)."""
    if unknown := _unknown_fields(dict(request.GET), RunsForm):
        return unknown
    form = RunsForm(request.GET)
    if not form.is_valid():
        return _form_errors(form)
    d = form.cleaned_data
    page = runs.page(form.run_filter(), d["older"], d["newer"])
    return JsonResponse(
        {
            "runs": [_run(run) for run in page.rows],
            "older": page.older.encode() if page.older else None,
            "newer": page.newer.encode() if page.newer else None,
            "error_scanned": page.error_scanned,
        }
    )


urlpatterns = [path("runs/", run_list, name="api_runs")]
