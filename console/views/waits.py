"""Waiting: the runs that gave back their slot to wait for an event or a time
(``ctx.wait_for_event``, ``ctx.sleep``; workers/waits, docs/waits.md), a page at a time,
newest first, with the operators' Approve, Reject and Cancel."""

from __future__ import annotations

from django.http import HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_POST

from console.actions import services
from console.actions.action_forms import AnswerForm, form_message
from console.runtime import keys, redis_client
from console.views.access import HtmxHttpRequest, operator_required, viewer_required
from console.views.actions import _answer, _run
from workers.models import Door
from workers.waits import view

PAGE_SIZE = 25
# An offset past this is not a page anyone turns to: refused rather than read.
MAX_OFFSET = 1_000_000


def _offset(raw: str | None) -> int:
    return min(int(raw), MAX_OFFSET) if raw and raw.isdigit() else 0


@viewer_required
def waits_page(request: HtmxHttpRequest) -> HttpResponse:
    client, streams = redis_client(), services.wait_streams()
    counts = view.counts(client, keys(), streams)
    asked = request.GET.get("stream", "")
    # The stream asked for if it is one of ours, else the first with waits, else the first.
    stream = asked if asked in counts else next((s for s in streams if counts[s]), streams[0])
    page = view.page(client, keys(), stream, _offset(request.GET.get("offset")), PAGE_SIZE)
    context = {
        "waits": page,
        "counts": counts if len(counts) > 1 else {},
        "total": sum(counts.values()),
        "at_ms": page.at_ms,
        "page": "waits",
    }
    template = "console/_waits.html" if request.htmx else "console/waits.html"
    return render(request, template, context)


@require_POST
@operator_required
def answer_action(request: HtmxHttpRequest, event_hash: str) -> HttpResponse:
    form = AnswerForm(request.POST)
    if not form.is_valid():
        return _answer(request, None, error=form_message(form), status=400)
    d, stream = form.cleaned_data, request.POST.get("stream", "")
    return _run(
        request,
        lambda: services.answer(
            request.user, Door.CONSOLE, event_hash, d["approved"], d["comment"], stream
        ),
    )
