"""A URL map with one view that fails, for the debug page tests."""

from __future__ import annotations

from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django.urls import path


def boom(request: HttpRequest) -> HttpResponse:
    # Locals the debug page lists with their values, as a real failing view would have them.
    url = settings.REDIS_URL
    llm = settings.STREAMDESK_LLM
    raise ConnectionError(f"lost {url} while calling {llm.base_url}")


urlpatterns = [path("boom/", boom)]
