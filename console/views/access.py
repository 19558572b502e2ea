"""Who may see the console (viewers) and who may act on it (operators)."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from django.contrib import admin
from django.contrib.admin.forms import AdminAuthenticationForm
from django.contrib.auth import REDIRECT_FIELD_NAME
from django.contrib.auth import views as auth_views
from django.contrib.auth.views import redirect_to_login
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse, HttpResponseBase
from django.shortcuts import render
from django.views.decorators.cache import never_cache
from django.views.decorators.debug import sensitive_post_parameters
from django_htmx.middleware import HtmxDetails

from console.edge import throttle
from console.roles import can_operate, can_view

View = Callable[..., HttpResponseBase]


class HtmxHttpRequest(HttpRequest):
    """A request as django-htmx's middleware leaves it."""

    htmx: HtmxDetails


def viewer_required(view: View) -> View:
    """Anonymous users go to the login page; users who may not view get 403."""

    @functools.wraps(view)
    def wrapper(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponseBase:
        if not request.user.is_authenticated:
            return redirect_to_login(request.get_full_path())
        if not can_view(request.user):
            raise PermissionDenied("The console is for staff, viewers and operators.")
        return view(request, *args, **kwargs)

    return wrapper


def operator_required(view: View) -> View:
    """Like viewer_required, and 403 for anyone who may not act (viewers)."""

    @functools.wraps(view)
    def wrapper(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponseBase:
        if not request.user.is_authenticated:
            return redirect_to_login(request.get_full_path())
        if not can_operate(request.user):
            raise PermissionDenied("Only operators may act on streams; you may view them.")
        return view(request, *args, **kwargs)

    return wrapper


class LoginView(auth_views.LoginView):
    """Django's sign-in page, answering 429 with the wait while the typed user or the
    address has too many recent failures (console/edge/throttle.py); the password is not checked."""

    template_name = "console/login.html"
    redirect_authenticated_user = True

    def post(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        username, wait_s = _locked_out(request)
        if not wait_s:
            return super().post(request, *args, **kwargs)
        form = self.get_form_class()(request, initial={"username": username})
        context = self.get_context_data(form=form, throttled=throttle.too_many(wait_s))
        response = self.render_to_response(context, status=429)
        response["Retry-After"] = str(wait_s)
        return response


def _locked_out(request: HttpRequest) -> tuple[str, int]:
    """The typed user name, and how long sign-ins for it (or from this address) must wait."""
    username = str(request.POST.get("username", ""))
    return username, throttle.throttle().wait_s(username, throttle.client_address(request))


@sensitive_post_parameters()  # as Django's own sign-in: no password in an error report
@never_cache
def admin_login(request: HttpRequest) -> HttpResponse:
    """The admin's sign-in, answering a locked-out user 429 with the wait, as the console's
    does. The admin's own view only sees ``authenticate()`` return nobody (the throttle
    refuses before any password is checked) and said "wrong password" with a 200."""
    if request.method == "POST":
        username, wait_s = _locked_out(request)
        if wait_s:
            return _admin_throttled(request, username, wait_s)
    return admin.site.login(request)


def _admin_throttled(request: HttpRequest, username: str, wait_s: int) -> HttpResponse:
    request.current_app = admin.site.name
    context = {
        **admin.site.each_context(request),
        "title": "Log in",
        "app_path": request.get_full_path(),
        "username": request.user.get_username(),
        "form": AdminAuthenticationForm(request, initial={"username": username}),
        "throttled": throttle.too_many(wait_s),
        REDIRECT_FIELD_NAME: request.POST.get(REDIRECT_FIELD_NAME, ""),
    }
    response = render(request, "console/admin_login.html", context, status=429)
    response["Retry-After"] = str(wait_s)
    return response
