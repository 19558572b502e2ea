"""The console's action buttons: operators only, CSRF-protected POSTs answered with a partial."""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.http import Http404, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST

from console.actions import services
from console.actions.action_forms import form_message
from console.reads.browse import valid_id
from console.views.access import HtmxHttpRequest, operator_required
from workers.core.errors import InvalidAction, RedisUnavailable, StreamdeskError
from workers.models import Door
from workers.operations import ActionOutcome


def _answer(
    request: HtmxHttpRequest, outcome: ActionOutcome | None, error: str = "", status: int = 200
) -> HttpResponse:
    if request.htmx:
        context = {"outcome": outcome, "error": error, "job": services.job_of(outcome)}
        response = render(request, "console/_outcome.html", context, status=status)
        # Lists on the page reload themselves when something changed.
        if outcome is not None:
            response["HX-Trigger"] = "streamdesk:changed"
        return response
    if error:
        messages.error(request, error)
    elif outcome is not None:
        messages.success(request, outcome.detail or f"{outcome.action}: {outcome.count} done")
    return redirect(request.headers.get("Referer") or "overview")


def _run(request: HtmxHttpRequest, call: Any) -> HttpResponse:
    try:
        return _answer(request, call())
    except InvalidAction as exc:  # e.g. a claim to a consumer that is not live
        return _answer(request, None, error=str(exc), status=400)
    except RedisUnavailable:
        raise  # a 503 with Retry-After, as everywhere (console/edge/unavailable.py)
    except StreamdeskError as exc:
        return _answer(request, None, error=str(exc), status=409)


def _act(
    request: HtmxHttpRequest,
    table: dict[str, services.ConsoleAction],
    action: str,
    where: dict[str, str],
) -> HttpResponse:
    spec = table.get(action)
    if spec is None:
        raise Http404(f"No action {action!r}.")
    form = spec.form(request.POST)
    if not form.is_valid():
        return _answer(request, None, error=form_message(form), status=400)
    who = services.actor(request.user, Door.CONSOLE)
    return _run(request, lambda: spec.call(who, where, form.cleaned_data))


@require_POST
@operator_required
def group_action(request: HtmxHttpRequest, stream: str, group: str, action: str) -> HttpResponse:
    where = {"stream": stream, "group": group}
    return _act(request, services.GROUP_ACTIONS, action, where)


@require_POST
@operator_required
def dead_action(request: HtmxHttpRequest, stream: str, action: str) -> HttpResponse:
    return _act(request, services.DEAD_ACTIONS, action, {"stream": stream})


@require_POST
@operator_required
def retry_dead_letter(request: HtmxHttpRequest, stream: str, dead_id: str) -> HttpResponse:
    """A dead letter's own Retry button (a row, or the event page): its outcome in its place.
    The list is not reloaded, so the row stays and says what became of it."""
    if not valid_id(dead_id):
        return _answer(request, None, error=f"{dead_id[:60]!r} is not a dead letter id", status=400)
    try:
        outcome = services.retry_letter(request.user, Door.CONSOLE, stream, dead_id)
    except StreamdeskError as exc:
        return _answer(request, None, error=str(exc), status=409)
    if not request.htmx:
        return _answer(request, outcome)
    return render(request, "console/_retry_outcome.html", {"outcome": outcome, "stream": stream})


@require_POST
@operator_required
def rerun_action(request: HtmxHttpRequest, event_hash: str) -> HttpResponse:
    reason = request.POST.get("reason", "").strip()
    if not reason:
        return _answer(request, None, error="a force re-run needs a reason", status=400)
    return _run(request, lambda: services.rerun(request.user, Door.CONSOLE, event_hash, reason))


@require_POST
@operator_required
def cancel_action(request: HtmxHttpRequest, event_hash: str) -> HttpResponse:
    reason = request.POST.get("reason", "").strip()
    return _run(request, lambda: services.cancel(request.user, Door.CONSOLE, event_hash, reason))
