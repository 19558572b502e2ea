"""Errors: failures grouped by fingerprint (exception type, normalised message, top frame),
each group with its count, first and last seen, the types and streams it hit, a sample, and
Retry group / Purge group as tracked bulk jobs (docs/console.md#errors)."""

from __future__ import annotations

from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_POST

from console.actions import error_groups
from console.reads import errors
from console.runtime import keys, redis_client
from console.views.access import HtmxHttpRequest, operator_required, viewer_required
from console.views.actions import _act
from workers.core.errors import InvalidAction
from workers.operations.error_groups import fingerprint as checked_fingerprint

# An offset past this is not a page anyone turns to.
MAX_OFFSET = 1_000_000


def _offset(raw: str | None) -> int:
    return min(int(raw), MAX_OFFSET) if raw and raw.isdigit() else 0


@viewer_required
def errors_page(request: HtmxHttpRequest) -> HttpResponse:
    found = errors.overview(redis_client(), keys(), _offset(request.GET.get("offset")))
    context = {"errors": found, "failing": errors.failing(), "page": "errors"}
    template = "console/_errors.html" if request.htmx else "console/errors.html"
    return render(request, template, context)


@viewer_required
def error_group_page(request: HttpRequest, stream: str, fingerprint: str) -> HttpResponse:
    try:
        fp = checked_fingerprint(fingerprint)
    except InvalidAction as exc:
        raise Http404(str(exc)) from None
    found = errors.detail(redis_client(), keys(), stream, fp, _offset(request.GET.get("offset")))
    context = {"detail": found, "stream": stream, "fingerprint": fp, "page": "errors"}
    return render(request, "console/error_group.html", context, status=200 if found else 404)


@require_POST
@operator_required
def error_group_action(
    request: HtmxHttpRequest, stream: str, fingerprint: str, action: str
) -> HttpResponse:
    where = {"stream": stream, "fingerprint": fingerprint}
    return _act(request, error_groups.GROUP_ACTIONS, action, where)
