"""``/api/waits/``: the runs waiting on a stream, and an operator's answer to one, in the
manner of ``api.py``'s actions (its authentication, roles, body checks and outcomes).
``console/urls.py`` mounts it under ``/api/``."""

from __future__ import annotations

from django import forms
from django.http import HttpRequest, JsonResponse
from django.urls import path

from console.actions import action_forms, services
from console.actions.api import _body, _form_errors, _outcome, _unknown_fields, api_view, error
from console.runtime import keys, redis_client
from workers.core.errors import InvalidAction
from workers.models import Door
from workers.operations import inputs
from workers.waits import view


class AnswerBody(action_forms.AnswerForm):
    """The API's answer also takes the stream the run waits on (default: the engine's)."""

    stream = forms.CharField(required=False, max_length=inputs.MAX_NAME_CHARS)


def _number(request: HttpRequest, name: str, default: int, most: int) -> int:
    raw = request.GET.get(name, "")
    if not raw:
        return default
    if not raw.isdigit() or int(raw) > most:
        raise InvalidAction(name, f"{raw[:40]!r} is not a whole number from 0 to {most}")
    return int(raw)


@api_view(operate=False)
def waits(request: HttpRequest) -> JsonResponse:
    """``?stream=`` (default: the engine's; each partition of a partitioned one),
    ``offset`` and ``limit`` (per stream, newest first)."""
    try:
        offset = _number(request, "offset", 0, 1_000_000)
        limit = max(_number(request, "limit", view.PAGE_SIZE, view.MAX_PAGE_SIZE), 1)
        asked = request.GET.get("stream", "")
        streams = services.wait_streams(inputs.stream(asked) if asked else "")
    except InvalidAction as exc:
        return error(400, str(exc))
    pages = [view.page(redis_client(), keys(), s, offset, limit) for s in streams]
    return JsonResponse(
        {
            "total": sum(p.total for p in pages),
            "offset": offset,
            "limit": limit,
            "streams": {p.stream: p.total for p in pages},
            "waits": [w.as_dict() for p in pages for w in p.waits],
        }
    )


@api_view(operate=True)
def answer(request: HttpRequest, event_hash: str) -> JsonResponse:
    """``{"approved": true|false, "comment": "...", "stream": "..."}``."""
    data = _body(request)
    if isinstance(data, str):
        return error(400, data)
    if unknown := _unknown_fields(data, AnswerBody):
        return unknown
    if not isinstance(data.get("approved"), bool):
        return error(400, "approved: true (approve) or false (reject), a JSON boolean")
    form = AnswerBody(data)
    if not form.is_valid():
        return _form_errors(form)
    d, who = form.cleaned_data, request.user
    return _outcome(
        lambda: services.answer(who, Door.API, event_hash, d["approved"], d["comment"], d["stream"])
    )


urlpatterns = [
    path("waits/", waits, name="api_waits"),
    path("waits/<str:event_hash>/answer/", answer, name="api_wait_answer"),
]
