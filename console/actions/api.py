"""``/api/``: the operator actions as JSON, for scripts (docs/api.md).

Authenticate with the console session (and its CSRF token) or ``Authorization: Bearer
<token>`` (``manage.py apitoken create``). Viewers may read; every action needs an operator.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable
from typing import Any

from django.http import HttpRequest, HttpResponse, JsonResponse
from django.middleware.csrf import CsrfViewMiddleware
from django.urls import path
from django.utils import timezone
from django.views.decorators.csrf import csrf_exempt

from console.actions import action_forms, services
from console.edge import throttle
from console.live import health
from console.params import NameConverter  # noqa: F401 (registers the <name:> converter)
from console.reads.previews import PreviewBusy, preview_slot
from console.roles import can_operate, can_view
from console.runtime import keys, redis_client
from workers.core.errors import (
    ActionFailed,
    ActionRefused,
    PayloadInvalid,
    RedisUnavailable,
    StreamdeskError,
)
from workers.core.fanout import agent_of
from workers.from_settings import engine_config, rate_budgets, stream_partitions
from workers.models import ApiToken, BulkJob, Door
from workers.monitor.sample import GroupInfo, StreamInfo, collect
from workers.operations import jobs
from workers.operations.tokens import hash_token
from workers.producers.webhooks.intake import parse_json
from workers.runtime.ratelimit import Level

JsonView = Callable[..., JsonResponse]
# Group actions that act on a logical stream as a whole: one pause flag for its partitions.
WHOLE_STREAM = ("pause", "resume")
SAFE_METHODS = ("GET", "HEAD", "OPTIONS", "TRACE")
# An action's body is an object of fields, one of them a list of ids: two levels. Deeper
# nesting is refused before the parser recurses into it (a RecursionError, a 500, before).
BODY_MAX_DEPTH = 8
# Seconds a caller whose previous preview is still counting should wait (its bound is < 1 s).
PREVIEW_RETRY_AFTER_S = 1


def error(status: int, message: str, **extra: Any) -> JsonResponse:
    return JsonResponse({"error": message, **extra}, status=status)


def _token_user(request: HttpRequest) -> Any:
    header = request.headers.get("Authorization", "")
    if not header.startswith("Bearer "):
        return None
    token = (
        ApiToken.objects.select_related("user")
        .filter(key_hash=hash_token(header.removeprefix("Bearer ").strip()))
        .first()
    )
    if token is None or not token.user.is_active:
        return None
    ApiToken.objects.filter(pk=token.pk).update(last_used_at=timezone.now())
    return token.user


def _csrf_failure(request: HttpRequest) -> HttpResponse | None:
    check = CsrfViewMiddleware(lambda r: HttpResponse())
    check.process_request(request)
    return check.process_view(request, lambda r: HttpResponse(), (), {})


def _authenticate(request: HttpRequest) -> Any | JsonResponse:
    """The token's user, the session's, or the error to answer. Bad tokens count against
    the caller's address like failed sign-ins (console/edge/throttle.py)."""
    if "Authorization" not in request.headers:
        user = request.user
        if request.method not in SAFE_METHODS and user.is_authenticated and _csrf_failure(request):
            return error(403, "CSRF check failed: send the X-CSRFToken header")
        return user
    limiter, address = throttle.throttle(), throttle.client_address(request)
    wait_s = limiter.wait_s("", address, throttle.TOKEN)
    if wait_s:
        return _too_many(wait_s)
    user = _token_user(request)
    if user is None:
        limiter.failed("", address, throttle.TOKEN)
        return error(401, "invalid or revoked API token")
    return user


def _too_many(wait_s: int) -> JsonResponse:
    response = error(429, throttle.too_many(wait_s, "invalid API tokens from this address"))
    response["Retry-After"] = str(wait_s)
    return response


def api_view(*, operate: bool, read: bool = False) -> Callable[[JsonView], JsonView]:
    """Actions answer POST only, reads GET and HEAD only (405 otherwise), so no link or
    cross-site navigation can act. Token or session auth (session writes need CSRF);
    401, then 403 for the wrong role. ``read``: a GET that only operators may make (a
    costly read that serves an action, as the console's own page is)."""
    methods = ("GET", "HEAD") if read or not operate else ("POST",)

    def decorate(view: JsonView) -> JsonView:
        @csrf_exempt
        @functools.wraps(view)
        def wrapper(request: HttpRequest, *args: Any, **kwargs: Any) -> JsonResponse:
            if request.method not in methods:
                response = error(405, f"use {' or '.join(methods)}, not {request.method}")
                response["Allow"] = ", ".join(methods)
                return response
            user = _authenticate(request)
            if isinstance(user, JsonResponse):
                return user
            if not user.is_authenticated:
                return error(401, "authenticate with a session or 'Authorization: Bearer <token>'")
            allowed = can_operate(user) if operate else can_view(user)
            if not allowed:
                return error(403, "operators only" if operate else "viewers only")
            request.user = user
            return view(request, *args, **kwargs)

        return wrapper

    return decorate


def _body(request: HttpRequest) -> dict[str, Any] | str:
    """The body's JSON object, or why it is not one. Bounded in depth (the webhooks' parser),
    and text every store can hold: a lone surrogate escape (``"\\ud800"``) parses to a
    character no UTF-8 encoder writes, and would fail the audit record after the action."""
    try:
        data = parse_json(request.body or b"{}", BODY_MAX_DEPTH)
        json.dumps(data, ensure_ascii=False).encode("utf-8")
    except PayloadInvalid as exc:
        return f"the body must be a JSON object: {str(exc).removeprefix('(root): ')}"
    except UnicodeEncodeError as exc:
        return f"the body holds a lone surrogate escape ({exc.object[exc.start]!a}), not text"
    return data if isinstance(data, dict) else "the body must be a JSON object"


def _result(call: Callable[[], Any]) -> tuple[int, dict[str, Any]]:
    """An action's HTTP status and body: 409 refused or failed on what Redis holds (a key
    of another type; recorded as ``failed``), 400 bad, 202 queued as a job."""
    try:
        outcome = call()
    except RedisUnavailable:
        raise  # a 503 with Retry-After, as everywhere (console/edge/unavailable.py)
    except (ActionRefused, ActionFailed) as exc:  # what Redis holds refused it, not the input
        return 409, {"error": str(exc)}
    except StreamdeskError as exc:
        return 400, {"error": str(exc)}
    return 202 if outcome.job_id else 200, outcome.as_dict()


def _outcome(call: Callable[[], Any]) -> JsonResponse:
    status, body = _result(call)
    return JsonResponse(body, status=status)


def _unknown_fields(data: dict[str, Any], form: type[Any]) -> JsonResponse | None:
    """A field the action does not take is an error, never ignored: ``dry_run`` sent to an
    action without a dry run would otherwise act for real."""
    unknown = sorted(set(data) - set(form.base_fields))
    if not unknown:
        return None
    return error(400, f"{unknown[0]}: not accepted here", accepted=sorted(form.base_fields))


def _form_errors(form: Any) -> JsonResponse:
    field, messages = next(iter(form.errors.items()))
    return error(400, f"{field}: {messages[0]}", fields=form.errors)


def _act(
    request: HttpRequest,
    table: dict[str, services.ConsoleAction],
    action: str,
    where: dict[str, str],
    partitions: list[str] | None = None,
) -> JsonResponse:
    spec = table.get(action)
    data = _body(request)
    if spec is None:
        return error(404, f"no action {action!r}", actions=sorted(table))
    if isinstance(data, str):
        return error(400, data)
    unknown = _unknown_fields(data, spec.form)
    if unknown:
        return unknown
    form = spec.form(data)
    if not form.is_valid():
        return _form_errors(form)
    who = services.actor(request.user, Door.API)
    if not partitions:
        return _outcome(lambda: spec.call(who, where, form.cleaned_data))
    if form.cleaned_data.get("ids"):
        return _name_a_partition(where["stream"], "ids name entries of one", partitions)
    data = form.cleaned_data
    return _each_outcome(
        where["stream"], lambda p: spec.call(who, {**where, "stream": p}, data), partitions
    )


def _each_outcome(stream: str, call: Callable[[str], Any], partitions: list[str]) -> JsonResponse:
    """A filter's action on each partition of ``stream``: each its own outcome and audit
    record, as the command line does; the first refusal or error ends it."""
    outcomes: list[dict[str, Any]] = []
    for partition in partitions:
        status, body = _result(functools.partial(call, partition))
        if status >= 400:
            return error(status, f"{partition}: {body['error']}", done=outcomes)
        outcomes.append(body)
    queued = any(o.get("job_id") for o in outcomes)
    return JsonResponse({"stream": stream, "partitions": outcomes}, status=202 if queued else 200)


def _name_a_partition(stream: str, why: str, partitions: list[str]) -> JsonResponse:
    message = f"{stream} is split into partitions and {why}: post to that partition's URL"
    return error(400, message, partitions=partitions)


def _split(stream: str) -> list[str] | None:
    """A partitioned stream's partitions, None for any other stream."""
    streams = stream_partitions(stream)
    return streams if streams != [stream] else None


@api_view(operate=True)
def group_action(request: HttpRequest, stream: str, group: str, action: str) -> JsonResponse:
    known = action in services.GROUP_ACTIONS
    if known and action not in WHOLE_STREAM and (partitions := _split(stream)):
        return _name_a_partition(stream, f"{action} acts on the entries of one", partitions)
    return _act(request, services.GROUP_ACTIONS, action, {"stream": stream, "group": group})


@api_view(operate=True)
def dead_action(request: HttpRequest, stream: str, action: str) -> JsonResponse:
    return _act(request, services.DEAD_ACTIONS, action, {"stream": stream}, _split(stream))


@api_view(operate=True, read=True)  # the console's preview guards: operators, one at a time
def dead_preview(request: HttpRequest, stream: str) -> JsonResponse:
    data = request.GET.copy()
    data["all"] = "on"
    form = action_forms.DeadFilterForm(data)
    if not form.is_valid():
        return _form_errors(form)
    try:
        with preview_slot(redis_client(), keys(), int(request.user.pk or 0)):
            p = services.preview(stream, form)
    except PreviewBusy:
        response = error(429, "your previous preview is still counting: try again")
        response["Retry-After"] = str(PREVIEW_RETRY_AFTER_S)
        return response
    return JsonResponse(
        {
            "matching": p.matching,
            "already_done": p.already_done,
            "scanned": p.scanned,
            "complete": p.complete,
        }
    )


def _job(job: BulkJob) -> dict[str, Any]:
    fields = (
        "id",
        "action",
        "stream",
        "group",
        "status",
        "cancel_requested",
        "cursor",
        "total",
        "done",
        "skipped",
        "created_by",
        "door",
        "reason",
        "error",
    )
    out: dict[str, Any] = {f: getattr(job, f) for f in fields}
    for f in ("created_at", "started_at", "finished_at"):
        value = getattr(job, f)
        out[f] = value.isoformat() if value else None
    return out


@api_view(operate=False)
def job_detail(request: HttpRequest, job_id: int) -> JsonResponse:
    job = BulkJob.objects.filter(pk=job_id).first()
    return JsonResponse(_job(job)) if job else error(404, f"no job {job_id}")


@api_view(operate=True)
def job_cancel(request: HttpRequest, job_id: int) -> JsonResponse:
    return _outcome(lambda: jobs.cancel(services.actor(request.user, Door.API), job_id))


@api_view(operate=False)
def streams(request: HttpRequest) -> JsonResponse:
    sample = collect(redis_client(), keys(), budgets=rate_budgets())
    config = engine_config()
    return JsonResponse(
        {
            "at_ms": sample.at_ms,
            "streams": [
                _stream(s, sample.at_ms, config.claim_idle_ms, config.group) for s in sample.streams
            ],
            "budgets": [_budget(level) for level in sample.budgets],
            "usage": {t: _usage(u) for t, u in sample.usage.items()},
        }
    )


def _usage(usage: dict[str, float]) -> dict[str, float | int]:
    # Counts as integers; only the cost is a fraction.
    return {k: v if k == "cost_usd" else int(v) for k, v in usage.items()}


def _budget(level: Level) -> dict[str, Any]:
    return {
        "name": level.budget.name,
        "rate_per_s": level.budget.rate,
        "burst": level.budget.burst,
        # Below zero: tokens reserved by deferred events waiting for them.
        "tokens": round(level.tokens, 3),
        "taken": level.taken,
        "deferrals": level.deferrals,
        "waiting": level.waiting,
        # Live per-value buckets of a keyed budget (``github:42``...).
        "keyed_buckets": level.keyed,
    }


def _health(mark: health.Health) -> dict[str, Any]:
    return {"level": mark.level, "reasons": mark.reasons}


def _group(g: GroupInfo, at_ms: int, claim_idle_ms: int, home: str) -> dict[str, Any]:
    oldest = health.oldest_pending(g, at_ms, claim_idle_ms)
    return {
        "name": g.name,
        # Whose group (issue 31): a named agent's name, "" for the home group, null for a
        # group of no agent of this deployment's; and the group's own engine counters.
        "agent": agent_of(home, g.name),
        "paused_by": g.paused_by,
        "counters": g.counters,
        "pending": g.pending,
        "lag": g.lag,
        "consumers": len(g.consumers),
        "live_consumers": g.live_consumers,
        "oldest_pending_idle_ms": g.oldest_pending_idle_ms,
        # The console's own reading of it: waiting (with due_ms), idle, reclaimable, stuck.
        "oldest_pending": None
        if oldest is None
        else {"id": g.oldest_pending_id, "state": oldest.kind, "due_ms": oldest.due_ms},
        "health": _health(health.group_health(g, claim_idle_ms)),
    }


def _stream(s: StreamInfo, at_ms: int, claim_idle_ms: int, home: str) -> dict[str, Any]:
    return {
        "name": s.name,
        "length": s.length,
        "dead_letters": s.dead_letters,
        "counters": s.counters,
        "health": _health(health.stream_health(s, claim_idle_ms)),
        "groups": [_group(g, at_ms, claim_idle_ms, home) for g in s.groups],
    }


urlpatterns = [
    path("streams/", streams, name="api_streams"),
    # <name:>: any stream or group name, "/" included.
    path("streams/<name:stream>/groups/<name:group>/<str:action>/", group_action, name="api_group"),
    path("streams/<name:stream>/dead/preview/", dead_preview, name="api_dead_preview"),
    path("streams/<name:stream>/dead/<str:action>/", dead_action, name="api_dead"),
    path("jobs/<int:job_id>/", job_detail, name="api_job"),
    path("jobs/<int:job_id>/cancel/", job_cancel, name="api_job_cancel"),
]
