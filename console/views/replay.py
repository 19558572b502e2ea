"""The Replay page: a range of the stream fed back to one agent, previewed, then started as
a bulk job whose progress is the Jobs table's (docs/replay.md)."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_POST

from console.actions import replay as service
from console.actions import services
from console.actions.action_forms import form_message
from console.live import realtime
from console.live.sampler import recent_jobs
from console.reads.previews import PreviewBusy, preview_slot
from console.runtime import keys, redis_client
from console.views.access import HtmxHttpRequest, operator_required, viewer_required
from console.views.actions import _answer, _run
from workers.core.errors import InvalidAction
from workers.models import Door


@viewer_required
def replay_page(request: HttpRequest) -> HttpResponse:
    form = service.ReplayForm(initial=request.GET.dict())
    context = {"form": form, "jobs": recent_jobs(), "live": [realtime.jobs_key()], "page": "replay"}
    return render(request, "console/replay.html", context)


def _preview_answer(request: HttpRequest, context: dict[str, object], status: int) -> HttpResponse:
    return render(request, "console/_replay_preview.html", context, status=status)


@operator_required  # it serves the Start button, which only operators have
def replay_preview(request: HttpRequest) -> HttpResponse:
    form = service.ReplayForm(request.GET)
    if not form.is_valid():
        return _preview_answer(request, {"error": form_message(form)}, 400)
    try:
        with preview_slot(redis_client(), keys(), int(request.user.pk or 0)):
            plan, preview = service.preview(form.cleaned_data)
    except PreviewBusy:
        error = "Your previous preview is still counting: try again."
        return _preview_answer(request, {"error": error}, 429)
    except InvalidAction as exc:
        return _preview_answer(request, {"error": str(exc)}, 400)
    context = {"plan": plan, "preview": preview, "form": form}
    return _preview_answer(request, context, 200)


@require_POST
@operator_required
def replay_start(request: HtmxHttpRequest) -> HttpResponse:
    form = service.ReplayForm(request.POST)
    if not form.is_valid():
        return _answer(request, None, error=form_message(form), status=400)
    who = services.actor(request.user, Door.CONSOLE)
    return _run(request, lambda: service.start(who, form.cleaned_data))
