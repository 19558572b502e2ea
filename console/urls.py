from __future__ import annotations

from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import path

from console.views import dashboard, events, streams

urlpatterns = [
    path("", dashboard.overview_page, name="overview"),
    path("workers/", dashboard.workers_page, name="workers"),
    path("streams/<str:stream>/", streams.stream_page, name="stream"),
    path("streams/<str:stream>/groups/<str:group>/", streams.group_page, name="group"),
    path("streams/<str:stream>/dead/", streams.dead_letters_page, name="dead_letters"),
    path("streams/<str:stream>/entries/<str:entry_id>/", events.event_page, name="event"),
    path("events/<str:event_hash>/", events.event_by_hash_page, name="event_by_hash"),
    path(
        "login/",
        auth_views.LoginView.as_view(
            template_name="console/login.html", redirect_authenticated_user=True
        ),
        name="login",
    ),
    path("logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("admin/", admin.site.urls),
]
