"""The console's action buttons: operators only, CSRF-protected POSTs answered with a partial."""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.http import Http404, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST

from console import services
from console.views.access import HtmxHttpRequest, operator_required
from workers.errors import InvalidAction, StreamdeskError
from workers.models import Door
from workers.operations import Outcome


def _answer(
    request: HtmxHttpRequest, outcome: Outcome | None, error: str = "", status: int = 200
) -> HttpResponse:
    if request.htmx:
        response = render(
            request, "console/_outcome.html", {"outcome": outcome, "error": error}, status=status
        )
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
    except StreamdeskError as exc:
        return _answer(request, None, error=str(exc), status=409)


def _act(
    request: HtmxHttpRequest, table: dict[str, services.Action], action: str, where: dict[str, str]
) -> HttpResponse:
    spec = table.get(action)
    if spec is None:
        raise Http404(f"No action {action!r}.")
    form = spec.form(request.POST)
    if not form.is_valid():
        return _answer(request, None, error=form.errors.as_text(), status=400)
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
def rerun_action(request: HtmxHttpRequest, event_hash: str) -> HttpResponse:
    reason = request.POST.get("reason", "").strip()
    if not reason:
        return _answer(request, None, error="a force re-run needs a reason", status=400)
    return _run(request, lambda: services.rerun(request.user, Door.CONSOLE, event_hash, reason))
