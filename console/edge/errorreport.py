"""Error reports (the DEBUG 500 page, error e-mails) without credentials.

Django hides settings whose names look secret; ``REDIS_URL``, ``DATABASE_URL``-style values and
the LLM configuration do not look it, and frame variables are shown as they are. Three layers:
settings and frame variables whose names look secret are hidden; every other value is shown
with the credentials in its URLs masked; and the finished report has every configured secret
value (the Redis and database passwords, the LLM key, webhook secrets, the metrics token,
``SECRET_KEY``) masked wherever it appears, an exception message included. Those values are
registered with ``workers.core.redact`` at start-up, so logs and stored error texts mask them too.
"""

from __future__ import annotations

import re
from collections.abc import ItemsView, Iterator
from pprint import pformat
from types import FrameType
from typing import Any
from urllib.parse import urlsplit

from django.conf import settings
from django.http import HttpRequest, QueryDict
from django.utils.safestring import SafeString, mark_safe
from django.views.debug import ExceptionReporter, SafeExceptionReporterFilter

from workers.core.redact import redact_text, register_secrets

# Django's list, plus the names of settings and variables that hold a server URL or a DSN.
HIDDEN = re.compile(
    "API|AUTH|TOKEN|KEY|SECRET|PASS|SIGNATURE|HTTP_COOKIE|URL|DSN|DATABASE|LLM|WEBHOOK", re.I
)


class _Shown:
    """A value as the report prints it, with URL credentials masked."""

    def __init__(self, value: Any) -> None:
        self.value = value

    def __repr__(self) -> str:
        try:
            return redact_text(pformat(self.value))
        except Exception as exc:  # a broken __repr__ must not break the report
            return f"<unprintable: {type(exc).__name__}>"


class SecretsFilter(SafeExceptionReporterFilter):
    """Active with DEBUG on too: the debug page is what a viewer who triggers a 500 sees."""

    hidden_settings = HIDDEN

    def is_active(self, request: HttpRequest | None) -> bool:
        return True

    def cleanse_setting(self, key: Any, value: Any) -> Any:
        cleansed = super().cleanse_setting(key, value)
        return redact_text(cleansed) if isinstance(cleansed, str) else cleansed

    def mask_by_name(self, params: QueryDict) -> QueryDict:
        """Query or form fields whose names look secret (``password``, ``token``...)."""
        masked = params.copy()
        for name in masked:
            if HIDDEN.search(name):
                masked[name] = self.cleansed_substitute
        return masked

    def get_post_parameters(self, request: HttpRequest | None) -> QueryDict | dict[str, Any]:
        posted = super().get_post_parameters(request)
        return self.mask_by_name(posted) if isinstance(posted, QueryDict) else posted

    def get_traceback_frame_variables(
        self, request: HttpRequest | None, tb_frame: FrameType
    ) -> ItemsView[str, Any]:
        shown: dict[str, Any] = {}
        for name, value in super().get_traceback_frame_variables(request, tb_frame):
            hidden = isinstance(name, str) and HIDDEN.search(name)
            shown[name] = self.cleansed_substitute if hidden else _Shown(value)
        return shown.items()


def configured_secrets() -> Iterator[str]:
    """Every secret value the settings hold, wherever it may surface in a report."""
    yield settings.SECRET_KEY
    yield getattr(getattr(settings, "STREAMDESK_LLM", None), "api_key", "")
    yield getattr(settings, "STREAMDESK_METRICS_TOKEN", "")
    for db in settings.DATABASES.values():
        yield str(db.get("PASSWORD") or "")
    yield urlsplit(settings.REDIS_URL).password or ""
    for source in getattr(settings, "STREAMDESK_WEBHOOKS", {}).values():
        if isinstance(source, dict):
            found = source.get("secrets", source.get("secret"))
            yield from [found] if isinstance(found, str) else (found or [])


def register_configured_secrets() -> None:
    """Once per process, at start-up (``ConsoleConfig.ready``): from then on every log line,
    error text and report masks these values (``workers.core.redact``), in the worker too."""
    register_secrets(*(s for s in configured_secrets() if isinstance(s, str)))


def _masked(report: str) -> str:
    # Registered at start-up already; again here so a setting changed since (a test's
    # override) is masked too. Registering a known value is a set lookup.
    register_configured_secrets()
    return redact_text(report)


class SecretsReporter(ExceptionReporter):
    """The report, HTML or text, with every configured secret masked at the end."""

    def get_traceback_data(self) -> dict[str, Any]:
        data = super().get_traceback_data()
        if self.request is not None and isinstance(self.filter, SecretsFilter):
            # Django lists the query string's fields unfiltered.
            data["request_GET_items"] = self.filter.mask_by_name(self.request.GET).items()
        return data

    # Masking replaces plain text in a page Django already escaped: it stays safe.
    def get_traceback_html(self) -> SafeString:
        return mark_safe(_masked(super().get_traceback_html()))

    def get_traceback_text(self) -> SafeString:
        return mark_safe(_masked(super().get_traceback_text()))
