"""Issue 26, item 6: a validly signed webhook whose event can never be stored (a lone
surrogate escape) is a 4xx the sender does not retry, with nothing published; it was a 500,
which senders retry for days."""

from __future__ import annotations

import json
from typing import Any

import pytest
import redis
from django.test import Client

from tests.support.engine import STREAM
from tests.support.webhook_signing import github_headers, hmac_headers

pytestmark = pytest.mark.django_db(transaction=True)

SOURCES = {
    "gh": {"scheme": "github", "mapping": "github", "secrets": ["new"]},
    "any": {"scheme": "hmac", "secret": "s3", "id_header": "X-Delivery"},
}


@pytest.mark.parametrize("escape", ["\\ud800", "\\udcff", "x\\udfffy"])
def test_signed_webhook_that_can_never_be_stored_is_400_and_publishes_nothing(
    r: redis.Redis, settings: Any, escape: str
) -> None:
    settings.STREAMDESK_WEBHOOKS = SOURCES
    body = ('{"order": 1, "note": "' + escape + '"}').encode()
    headers = {**hmac_headers("s3", body), "X-Delivery": "o-1"}
    answer = Client().post("/hooks/any/", body, content_type="application/json", headers=headers)
    assert answer.status_code == 400 and "never be stored" in answer.json()["error"]
    issue = {
        "action": "opened",
        "issue": {"number": 7, "title": "TITLE", "state": "open", "html_url": "https://x/7"},
        "repository": {"full_name": "acme/api"},
        "sender": {"login": "ada"},
    }
    gh_body = json.dumps(issue).replace("TITLE", escape).encode()
    gh = Client().post(
        "/hooks/gh/",
        gh_body,
        content_type="application/json",
        headers=github_headers("new", gh_body, "issues", "d-1"),
    )
    assert gh.status_code == 400, gh.content
    # Whole or nothing: no entry, and no replay record that would swallow a fixed resend.
    assert not r.exists(STREAM) and not r.keys("*webhooks:seen:*")
