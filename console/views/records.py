"""Bulk jobs and the audit log: what operators did, and what is still running."""

from __future__ import annotations

import csv
from urllib.parse import urlencode

import redis
from django import forms
from django.http import HttpRequest, HttpResponse, StreamingHttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_POST

from console.actions import action_forms, services
from console.live import realtime
from console.live.sampler import recent_jobs
from console.reads.previews import PreviewBusy, preview_slot
from console.runtime import keys, redis_client
from console.views.access import HtmxHttpRequest, operator_required, viewer_required
from console.views.actions import _answer, _run
from workers.models import AuditRecord, Door
from workers.operations import jobs
from workers.operations.spreadsheet import safe_row
from workers.store.audit import Action, Result

AUDIT_PAGE = 100
OUTCOMES = tuple(r.value for r in Result)
CSV_COLUMNS = (
    "at",
    "actor",
    "door",
    "action",
    "stream",
    "group",
    "count",
    "skipped",
    "outcome",
    "reason",
    "target",
    "detail",
    "job_id",
)


@viewer_required
def jobs_page(request: HttpRequest) -> HttpResponse:
    return render(
        request,
        "console/jobs.html",
        {"jobs": recent_jobs(), "live": [realtime.jobs_key()], "page": "jobs"},
    )


@require_POST
@operator_required
def cancel_job(request: HtmxHttpRequest, job_id: int) -> HttpResponse:
    who = services.actor(request.user, Door.CONSOLE)
    return _run(request, lambda: jobs.cancel(who, job_id))


class AuditFilter(forms.Form):
    actor = forms.CharField(required=False, max_length=256)
    action = forms.CharField(required=False, max_length=32)
    stream = forms.CharField(required=False, max_length=256)
    outcome = forms.ChoiceField(required=False, choices=[("", "any")] + [(o, o) for o in OUTCOMES])
    before = forms.IntegerField(required=False, min_value=1)


def _audit_rows(form: AuditFilter) -> object:
    rows = AuditRecord.objects.all()
    data = form.cleaned_data
    for field in ("actor", "action", "stream", "outcome"):
        if data.get(field):
            rows = rows.filter(**{field: data[field]})
    if data.get("before"):
        rows = rows.filter(id__lt=data["before"])
    return rows.order_by("-id")


@viewer_required
def audit_page(request: HttpRequest) -> HttpResponse | StreamingHttpResponse:
    form = AuditFilter(request.GET)
    if not form.is_valid():
        return render(request, "console/bad_request.html", {"form": form}, status=400)
    rows = _audit_rows(form)
    keep = {k: v for k, v in form.cleaned_data.items() if v and k != "before"}
    if request.GET.get("format") == "csv":
        return _csv(rows, keep)
    page = list(rows[: AUDIT_PAGE + 1])  # type: ignore[index]
    return render(
        request,
        "console/audit.html",
        {
            "records": page[:AUDIT_PAGE],
            "more": len(page) > AUDIT_PAGE,
            "form": form,
            "query": urlencode(keep),
            "actions": [a.value for a in Action],
            "outcomes": OUTCOMES,
            "page": "audit",
            "live": [],
        },
    )


class _Echo:
    def write(self, value: str) -> str:
        return value


def _csv(rows: object, keep: dict[str, object]) -> StreamingHttpResponse:
    """Every matching record, streamed: an export of a year of actions never loads at once.
    Text is made safe for spreadsheets: actors, reasons and stream names are anyone's."""
    writer = csv.writer(_Echo())

    def lines() -> object:
        yield writer.writerow(CSV_COLUMNS)
        for a in rows.iterator(chunk_size=2000):  # type: ignore[attr-defined]
            yield writer.writerow(safe_row([getattr(a, c) for c in CSV_COLUMNS]))

    response = StreamingHttpResponse(lines(), content_type="text/csv")  # type: ignore[arg-type]
    response["Content-Disposition"] = 'attachment; filename="streamdesk-audit.csv"'
    return response


def _preview_error(request: HttpRequest, error: str, status: int) -> HttpResponse:
    return render(request, "console/_preview.html", {"error": error}, status=status)


@operator_required  # it serves the redrive and purge buttons, which only operators have
def dead_preview(request: HttpRequest, stream: str) -> HttpResponse:
    data = request.GET.copy()
    data["all"] = "on"
    form = action_forms.DeadFilterForm(data)
    if not form.is_valid():
        return _preview_error(request, form.errors.as_text(), 400)
    try:
        with preview_slot(redis_client(), keys(), int(request.user.pk or 0)):
            preview = services.preview(stream, form)
    except PreviewBusy:
        return _preview_error(request, "Your previous preview is still counting: try again.", 429)
    except redis.ResponseError as exc:  # the dead-letter key holds something else
        return _preview_error(request, f"Redis cannot read the dead letters: {exc}", 409)
    return render(request, "console/_preview.html", {"preview": preview})


__all__ = ["_answer", "audit_page", "cancel_job", "dead_preview", "jobs_page"]
