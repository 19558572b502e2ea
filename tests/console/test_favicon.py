"""Browsers get a favicon: linked from every page, and /favicon.ico answered, not a 404."""

from __future__ import annotations

from pathlib import Path

import pytest
import redis
from django.test import Client

STATIC = Path(__file__).resolve().parents[2] / "static"


@pytest.mark.django_db
def test_favicon_ico_redirects_to_the_static_icon(client: Client) -> None:
    response = client.get("/favicon.ico")
    assert response.status_code == 301
    assert response["Location"] == "/static/console/favicon.ico"
    icon = (STATIC / "console" / "favicon.ico").read_bytes()
    assert icon[:4] == b"\x00\x00\x01\x00"  # an ICO header, one image


@pytest.mark.django_db
def test_every_page_links_the_icon(r: redis.Redis, staff_client: Client) -> None:
    # ``r``: the pages read the suite's Redis, not an embedded server started in the checkout.
    pages = [staff_client.get(url) for url in ("/", "/workers/", "/audit/")]
    pages.append(Client().get("/login/"))
    for page in pages:
        assert page.status_code == 200
        assert '<link rel="icon" href="/static/console/favicon.svg"' in page.content.decode()
    assert (STATIC / "console" / "favicon.svg").read_text().startswith("<svg")
