"""``/api/events/<event hash>/...``: the actions on one event (force re-run, cancel), in
the manner of ``api.py``'s (its authentication, roles, body checks and outcomes), beside it
so that module keeps to its size. ``console/urls.py`` mounts both under ``/api/``."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.http import HttpRequest, JsonResponse
from django.urls import path

from console.actions import action_forms, services
from console.actions.api import _body, _form_errors, _outcome, _unknown_fields, api_view, error
from workers.models import Door


@api_view(operate=True)
def rerun(request: HttpRequest, event_hash: str) -> JsonResponse:
    who = request.user
    return _on_event(
        request, action_forms.RerunForm, lambda d: services.rerun(who, Door.API, event_hash, d)
    )


@api_view(operate=True)
def cancel(request: HttpRequest, event_hash: str) -> JsonResponse:
    who = request.user
    return _on_event(
        request, action_forms.CancelForm, lambda d: services.cancel(who, Door.API, event_hash, d)
    )


def _on_event(
    request: HttpRequest, form_class: type[Any], act: Callable[[str], Any]
) -> JsonResponse:
    """An action on one event, whose only field is its reason."""
    data = _body(request)
    if isinstance(data, str):
        return error(400, data)
    form = form_class(data)
    if unknown := _unknown_fields(data, form_class):
        return unknown
    if not form.is_valid():
        return _form_errors(form)
    return _outcome(lambda: act(form.cleaned_data["reason"]))


urlpatterns = [
    path("events/<str:event_hash>/rerun/", rerun, name="api_rerun"),
    path("events/<str:event_hash>/cancel/", cancel, name="api_cancel"),
]
