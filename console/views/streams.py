"""A stream, one of its groups, and its dead letters: bounded pages, newest or oldest first."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlencode

import redis
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render

from console.live import health, realtime
from console.live.overview import GroupRow, Overview, StreamRow
from console.live.partitioned import partitioned
from console.live.realtime import DEAD_TABLE, PENDING_TABLE, RETRIES_TABLE
from console.reads import browse, why
from console.reads.entry_states import Group
from console.reads.forms import BrowseForm, PendingForm
from console.reads.retry_queue import LIMIT as RETRY_LIMIT
from console.reads.retry_queue import retry_queue
from console.runtime import keys, redis_client
from console.views.access import HtmxHttpRequest, viewer_required
from console.views.dashboard import current_overview, page_series
from workers.core.keys import dead_stream
from workers.flow import view as flow_view
from workers.from_settings import engine_config, stream_partitions


def _stream_row(stream: str, view: Overview | None = None) -> tuple[StreamRow, int]:
    view = view or current_overview()
    row = view.stream(stream)
    if row is None or not (row.info.exists or row.info.error):
        raise Http404(f"No stream named {stream!r}. Streams appear once something publishes.")
    return row, view.at_ms


def entry_groups(row: StreamRow) -> list[Group]:
    """The stream's groups as the entry states need them (their PELs and read positions)."""
    return [Group(g.info.name, g.info.last_delivered_id) for g in row.groups]


def _bad_request(request: HttpRequest, form: BrowseForm | PendingForm) -> HttpResponse:
    return render(request, "console/bad_request.html", {"form": form}, status=400)


def unreadable(request: HttpRequest, key: str, exc: redis.ResponseError) -> HttpResponse:
    """Redis refused the read (a key of another type under a stream's name): say so, 409."""
    context = {"key": key, "error": str(exc), "live": []}
    return render(request, "console/unreadable.html", context, status=409)


def _partitioned_page(
    request: HtmxHttpRequest, stream: str, view: Overview | None = None
) -> HttpResponse | None:
    """A logical stream's page: its totals and one row per partition (each partition has
    its own pages), or None when ``stream`` is not partitioned."""
    if stream_partitions(stream) == [stream]:
        return None  # a partition, or a stream that is not split (no sample read for it)
    view = view or current_overview()
    found = next((p for p in partitioned(view.streams) if p.name == stream), None)
    if found is None:
        return None
    context = {"stream": found, "at_ms": view.at_ms, "counter": 1, "own_page": True}
    template = "console/_partitioned.html" if request.htmx else "console/partitioned.html"
    return render(request, template, context)


@viewer_required
def stream_page(request: HtmxHttpRequest, stream: str) -> HttpResponse:
    form = BrowseForm(request.GET)
    if not form.is_valid():
        return _bad_request(request, form)
    view = current_overview()
    if view.stream(stream) is None and (totals := _partitioned_page(request, stream, view)):
        return totals
    row, at_ms = _stream_row(stream, view)
    try:
        # A key that is not a stream has no entries to list; its card says why.
        page = (
            None
            if row.info.error
            else browse.entries_page(
                redis_client(), stream, form.cursor(), groups=entry_groups(row), keys=keys()
            )
        )
    except redis.ResponseError as exc:
        return unreadable(request, stream, exc)
    context = {
        "row": row,
        "at_ms": at_ms,
        "page": page,
        "form": form,
        "live": [realtime.stream_key(stream)],
        "chart_series": None
        if request.htmx
        else page_series([row.info], realtime.stream_key(stream), at_ms),
    }
    template = "console/_entries.html" if request.htmx else "console/stream.html"
    return render(request, template, context)


def _group_row(row: StreamRow, group: str) -> GroupRow:
    found = next((g for g in row.groups if g.info.name == group), None)
    if found is None:
        raise Http404(f"Stream {row.info.name!r} has no consumer group named {group!r}.")
    return found


def _filter_query(form: PendingForm) -> str:
    """The filters as a query string, for the pager links (the cursor is added there)."""
    keep = {k: form.cleaned_data.get(k) for k in ("consumer", "min_idle_s", "min_deliveries")}
    return urlencode({k: v for k, v in keep.items() if v not in (None, "")})


def pending_context(
    client: redis.Redis,
    where: tuple[str, str],
    page: browse.PendingPage,
    at_ms: int,
    claim_idle_ms: int,
    paused: bool,
) -> dict[str, Any]:
    """What the pending rows show beside each entry: its state (waiting, idle, stuck...),
    its place in its key's queue and why it is held back. The page and its live table
    (``console/table_rows.py``) share it."""
    stream, group = where
    ids = [p.id for p in page.rows]
    return {
        "page": page,
        "at_ms": at_ms,
        "states": {
            p.id: health.pending_state(p.idle_ms, p.due_ms, at_ms, claim_idle_ms, paused=paused)
            for p in page.rows
        },
        # Keyed entries (workers/flow): where each stands in its key's queue.
        "positions": flow_view.positions(client, keys(), stream, group, ids),
        "whys": why.reasons(stream, ids),  # what holds a waiting entry back
    }


def retries_context(
    client: redis.Redis, where: tuple[str, str], at_ms: int, claim_idle_ms: int, max_deliveries: int
) -> dict[str, Any]:
    """The retry queue's rows: entries still held back by the engine (an operator's Retry now
    or claim ends that, and the entry is shown by its idle time again)."""

    def held(idle_ms: int, due_ms: int) -> bool:
        return health.pending_state(idle_ms, due_ms, at_ms, claim_idle_ms).kind == "waiting"

    stream, group = where
    rows = retry_queue(client, keys(), stream, group, at_ms, held, max_deliveries)
    return {"retries": rows, "at_ms": at_ms}


@viewer_required
def group_page(request: HtmxHttpRequest, stream: str, group: str) -> HttpResponse:
    form = PendingForm(request.GET)
    if not form.is_valid():
        return _bad_request(request, form)
    row, at_ms = _stream_row(stream)
    group_row = _group_row(row, group)
    try:
        page = browse.pending_page(
            redis_client(),
            stream,
            group,
            after=form.cursor(),
            f=form.pending_filter(),
            waits=keys().waits(stream, group),
        )
    except redis.ResponseError as exc:
        return unreadable(request, stream, exc)
    claim_idle_ms = engine_config().claim_idle_ms
    paused = group_row.info.paused_by is not None  # nothing reclaims: "paused", not "stuck"
    client = redis_client()
    where = (stream, group)
    max_deliveries = engine_config().max_deliveries
    context = {
        **pending_context(client, where, page, at_ms, claim_idle_ms, paused),
        # The retry queue is the whole page's, not the pending list's partial.
        **(
            {}
            if request.htmx
            else retries_context(client, where, at_ms, claim_idle_ms, max_deliveries)
        ),
        "row": row,
        "group": group_row,
        "flow_keys": flow_view.key_table(client, keys(), stream, group),
        "form": form,
        "live": [realtime.group_key(stream, group)],
        # The default view (first page, no filter) updates live; a filtered one stays put.
        "live_rows": "" if form.narrowed() else realtime.table_key(PENDING_TABLE, *where),
        "retry_live": realtime.table_key(RETRIES_TABLE, *where),
        "retry_limit": RETRY_LIMIT,
        "chart_series": (
            None
            if request.htmx
            else page_series([row.info], realtime.group_key(stream, group), at_ms)
        ),
        "filter_query": _filter_query(form),
    }
    template = "console/_pending.html" if request.htmx else "console/group.html"
    return render(request, template, context)


@viewer_required
def dead_letters_page(request: HtmxHttpRequest, stream: str) -> HttpResponse:
    form = BrowseForm(request.GET)
    if not form.is_valid():
        return _bad_request(request, form)
    try:
        page = browse.dead_page(redis_client(), stream, before=form.cursor())
    except redis.ResponseError as exc:
        return unreadable(request, dead_stream(stream), exc)
    # A partitioned stream's dead letters are its partitions': say where, not "none".
    first_and_empty = not page.rows and form.cursor() is None
    if first_and_empty and (totals := _partitioned_page(request, stream)):
        return totals
    # The newest page updates live (new letters on top); an older page stays put.
    live_rows = "" if form.cursor() else realtime.table_key(DEAD_TABLE, stream)
    live = [live_rows] if live_rows else []  # the header says "live" while it is
    context = {
        "stream": stream,
        "page": page,
        "form": form,
        "live": live,
        "live_rows": live_rows,
        "home": engine_config().group,  # a letter of another group says whose (issue 31)
    }
    template = "console/_dead_letters.html" if request.htmx else "console/dead_letters.html"
    return render(request, template, context)
