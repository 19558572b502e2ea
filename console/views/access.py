"""Who may see the console (viewers) and who may act on it (operators)."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from django.contrib.auth import views as auth_views
from django.contrib.auth.views import redirect_to_login
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse, HttpResponseBase
from django_htmx.middleware import HtmxDetails

from console import throttle
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
    address has too many recent failures (console/throttle.py); the password is not checked."""

    template_name = "console/login.html"
    redirect_authenticated_user = True

    def post(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        username = str(request.POST.get("username", ""))
        wait_s = throttle.throttle().wait_s(username, throttle.client_address(request))
        if not wait_s:
            return super().post(request, *args, **kwargs)
        form = self.get_form_class()(request, initial={"username": username})
        context = self.get_context_data(form=form, throttled=throttle.too_many(wait_s))
        response = self.render_to_response(context, status=429)
        response["Retry-After"] = str(wait_s)
        return response
