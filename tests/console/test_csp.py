"""The Content-Security-Policy header, and templates that need nothing it forbids."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import redis
from django.contrib.auth.models import User
from django.test import Client

from console.edge.csp import HEADER
from tests.support.engine import STREAM

pytestmark = pytest.mark.django_db(transaction=True)

TEMPLATES = Path(__file__).resolve().parents[2] / "templates"
PAGES = [
    "/",
    "/workers/",
    "/redis/",
    "/jobs/",
    "/audit/",
    f"/streams/{STREAM}/",
    f"/streams/{STREAM}/groups/agents/",
    f"/streams/{STREAM}/dead/",
    f"/streams/{STREAM}/entries/1-0/",
    "/no-such-page/",
]
# An inline <script> (one without src), an on*= handler, a style attribute, a javascript: URL.
INLINE_SCRIPT = re.compile(r"<script(?![^>]*\bsrc=)[^>]*>", re.IGNORECASE)
HANDLER = re.compile(r"""\son[a-z]+\s*=\s*["']""", re.IGNORECASE)
STYLE_ATTRIBUTE = re.compile(r"""\sstyle\s*=\s*["']""", re.IGNORECASE)
JS_URL = re.compile(r"javascript:", re.IGNORECASE)


def directives(value: str) -> dict[str, str]:
    found: dict[str, str] = {}
    for part in value.split(";"):
        name, _, sources = part.strip().partition(" ")
        if name:
            found[name] = sources
    return found


@pytest.fixture
def admin_client(db: Any) -> Client:
    client = Client()
    client.force_login(User.objects.create_superuser("root", password="pw-root"))
    return client


@pytest.mark.parametrize("url", PAGES)
def test_csp_header_on_every_console_page(r: redis.Redis, admin_client: Client, url: str) -> None:
    response = admin_client.get(url)
    assert response["Content-Type"].startswith("text/html")
    policy = directives(response[HEADER])
    assert policy["script-src"] == "'self'"
    assert policy["style-src"] == "'self'"
    assert policy["object-src"] == "'none'"
    assert policy["frame-ancestors"] == "'none'"
    assert policy["base-uri"] == "'none'"


def test_csp_header_on_the_login_page(r: redis.Redis) -> None:
    response = Client().get("/login/")
    assert response.status_code == 200
    assert directives(response[HEADER])["script-src"] == "'self'"


def test_csp_connect_src_is_the_exact_socket_origin(r: redis.Redis, admin_client: Client) -> None:
    response = admin_client.get("/", HTTP_HOST="localhost:8000")
    assert directives(response[HEADER])["connect-src"] == "'self' ws://localhost:8000"


def test_csp_connect_src_over_tls_is_wss(r: redis.Redis, admin_client: Client) -> None:
    response = admin_client.get("/", HTTP_HOST="localhost", secure=True)
    assert directives(response[HEADER])["connect-src"] == "'self' wss://localhost"


def test_csp_header_on_a_bad_host_400(r: redis.Redis) -> None:
    response = Client().get("/login/", HTTP_HOST="evil.example")
    assert response.status_code == 400
    assert directives(response[HEADER])["connect-src"] == "'self'"


def test_csp_admin_has_the_same_policy(r: redis.Redis, admin_client: Client) -> None:
    response = admin_client.get("/admin/")
    assert response.status_code == 200
    policy = directives(response[HEADER])
    assert policy["script-src"] == "'self'"
    assert policy["style-src"] == "'self'"


@pytest.mark.parametrize(
    "pattern", [INLINE_SCRIPT, HANDLER, STYLE_ATTRIBUTE, JS_URL], ids=lambda p: p.pattern
)
def test_csp_templates_have_nothing_inline(pattern: re.Pattern[str]) -> None:
    found = [
        f"{path.relative_to(TEMPLATES)}: {match.group(0)}"
        for path in sorted(TEMPLATES.rglob("*.html"))
        for match in pattern.finditer(path.read_text())
    ]
    assert found == []
