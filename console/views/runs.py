"""Runs: every ``AgentRun``, newest first, filtered by the query string, a keyset page at a
time (console/reads/runs.py), each linking to its event's page."""

from __future__ import annotations

from django.http import HttpResponse
from django.shortcuts import render

from console.reads import runs
from console.reads.runs_form import RunsForm
from console.views.access import HtmxHttpRequest, viewer_required


@viewer_required
def runs_page(request: HtmxHttpRequest) -> HttpResponse:
    form = RunsForm(request.GET)
    context: dict[str, object] = {"form": form, "page": "runs"}
    status = 200
    if form.is_valid():
        d, wanted = form.cleaned_data, form.run_filter()
        context["wanted"] = wanted
        context["runs"] = runs.page(wanted, d["older"], d["newer"])
        context["filter_query"] = form.filter_query()
        context["error_scan_rows"] = runs.ERROR_SCAN_ROWS
    else:
        status = 400  # the form says what is wrong, in place of the rows
    template = "console/_runs.html" if request.htmx else "console/runs.html"
    return render(request, template, context, status=status)
