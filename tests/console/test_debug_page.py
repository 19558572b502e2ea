"""A 500 with DEBUG on shows a viewer the debug page: no credential may be on it."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client

from workers.runtime.llm.config import LLMConfig

REDIS_PASSWORD = "redis-pass-3141"
LLM_KEY = "sk-llm-key-2718"
DB_PASSWORD = "db-pass-1618"


@pytest.fixture
def debug_on(settings: Any) -> None:
    settings.DEBUG = True
    settings.REDIS_URL = f"redis://default:{REDIS_PASSWORD}@127.0.0.1:6379/0"
    settings.STREAMDESK_LLM = LLMConfig(
        base_url=f"https://llm:{LLM_KEY}@llm.example.com/v1", api_key=LLM_KEY, model="m"
    )
    settings.CHANNEL_LAYERS = {"x": {"CONFIG": {"hosts": [f"redis://:{DB_PASSWORD}@h:1/0"]}}}


@pytest.mark.urls("tests.console.raising_urls")
@pytest.mark.parametrize("accept", ["text/html", "text/plain"])
def test_debug_page_hides_credentials(debug_on: None, db: Any, accept: str) -> None:
    response = Client(raise_request_exception=False).get("/boom/", headers={"accept": accept})
    body = response.content.decode()
    assert response.status_code == 500
    assert "ConnectionError" in body  # it is the debug page
    for secret in (REDIS_PASSWORD, LLM_KEY, DB_PASSWORD):
        assert secret not in body


@pytest.mark.urls("tests.console.raising_urls")
def test_debug_page_hides_posted_passwords(debug_on: None, db: Any) -> None:
    client = Client(raise_request_exception=False)
    response = client.post("/boom/?password=q-secret-1", {"password": "p-secret-2"})
    body = response.content.decode()
    assert response.status_code == 500
    assert "q-secret-1" not in body and "p-secret-2" not in body
