"""Who may see the console: signed-in staff, and no one else."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from django.contrib.auth.views import redirect_to_login
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse
from django_htmx.middleware import HtmxDetails

View = Callable[..., HttpResponse]


class HtmxHttpRequest(HttpRequest):
    """A request as django-htmx's middleware leaves it."""

    htmx: HtmxDetails


def staff_required(view: View) -> View:
    """Anonymous users go to the login page; signed-in non-staff users get 403."""

    @functools.wraps(view)
    def wrapper(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        user = request.user
        if not user.is_authenticated:
            return redirect_to_login(request.get_full_path())
        if not (user.is_active and user.is_staff):
            raise PermissionDenied("The console is for staff users.")
        return view(request, *args, **kwargs)

    return wrapper
