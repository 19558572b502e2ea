from __future__ import annotations

from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.templatetags.static import static
from django.urls import include, path
from django.utils.functional import lazy
from django.views.generic import RedirectView

from console.actions import api, api_agents, api_events, api_runs, api_waits
from console.intake.webhooks import receive_webhook
from console.prometheus_view import metrics
from console.views import (
    access,
    actions,
    agents,
    dashboard,
    errors,
    events,
    records,
    replay,
    streams,
    timers,
    waits,
)
from console.views import redis as redis_views
from console.views.runs import runs_page

# Stream and group names: any name Redis allows, ``/`` included (<name:>, console/params.py).

urlpatterns = [
    path("", dashboard.overview_page, name="overview"),
    path("workers/", dashboard.workers_page, name="workers"),
    path("runs/", runs_page, name="runs"),
    path("redis/", redis_views.redis_page, name="redis"),
    path("agents/", agents.agents_page, name="agents"),
    path("agents/<name:name>/", agents.agent_page, name="agent"),
    path("streams/<name:stream>/", streams.stream_page, name="stream"),
    path("streams/<name:stream>/groups/<name:group>/", streams.group_page, name="group"),
    path("streams/<name:stream>/dead/", streams.dead_letters_page, name="dead_letters"),
    path("streams/<name:stream>/entries/<str:entry_id>/", events.event_page, name="event"),
    path("events/<str:event_hash>/", events.event_by_hash_page, name="event_by_hash"),
    path("events/<str:event_hash>/rerun/", actions.rerun_action, name="rerun"),
    path("events/<str:event_hash>/cancel/", actions.cancel_action, name="cancel"),
    path(
        "streams/<name:stream>/groups/<name:group>/act/<str:action>/",
        actions.group_action,
        name="group_action",
    ),
    path("streams/<name:stream>/dead/act/<str:action>/", actions.dead_action, name="dead_action"),
    path(
        "streams/<name:stream>/dead/<str:dead_id>/retry/",
        actions.retry_dead_letter,
        name="dead_retry",
    ),
    path("streams/<name:stream>/dead/preview/", records.dead_preview, name="dead_preview"),
    path("jobs/", records.jobs_page, name="jobs"),
    path("replay/", replay.replay_page, name="replay"),
    path("replay/preview/", replay.replay_preview, name="replay_preview"),
    path("replay/start/", replay.replay_start, name="replay_start"),
    path("errors/", errors.errors_page, name="errors"),
    path("errors/<name:stream>/<str:fingerprint>/", errors.error_group_page, name="error_group"),
    path(
        "errors/<name:stream>/<str:fingerprint>/act/<str:action>/",
        errors.error_group_action,
        name="error_group_action",
    ),
    path("timers/", timers.timers_page, name="timers"),
    path("waits/", waits.waits_page, name="waits"),
    path("waits/<str:event_hash>/answer/", waits.answer_action, name="wait_answer"),
    path("jobs/<int:job_id>/cancel/", records.cancel_job, name="job_cancel"),
    path("audit/", records.audit_page, name="audit"),
    path(
        "api/",
        include(
            [
                *api.urlpatterns,
                *api_events.urlpatterns,
                *api_waits.urlpatterns,
                *api_runs.urlpatterns,
                *api_agents.urlpatterns,
            ]
        ),
    ),
    path("hooks/<str:source>/", receive_webhook, name="webhook"),
    path("metrics", metrics, name="metrics"),
    path(
        "login/",
        access.LoginView.as_view(),
        name="login",
    ),
    path("logout/", auth_views.LogoutView.as_view(), name="logout"),
    # Before the admin's own: a locked-out sign-in is a 429 there too (views/access.py).
    path("admin/login/", access.admin_login, name="admin_login"),
    path("admin/", admin.site.urls),
    # Browsers ask for /favicon.ico whatever the page links: send them to the static file.
    path(
        "favicon.ico",
        RedirectView.as_view(url=lazy(static, str)("console/favicon.ico"), permanent=True),
    ),
]
