"""Fuzzing the endpoint: whatever arrives, the answer is never a 500."""

from __future__ import annotations

import json
from typing import Any

import redis
from django.test import Client
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.support.webhook_signing import github_headers, hex_hmac

SOURCES = {
    "gh": {"scheme": "github", "mapping": "github", "secret": "s"},
    "slack": {"scheme": "hmac", "mapping": "slack", "secret": "s"},
    "any": {"scheme": "hmac", "secret": "s"},
}
ANSWERS = {200, 202, 400, 401, 404, 413, 415}
FUZZ = settings(
    max_examples=150,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=20,
)
bodies = st.one_of(
    st.binary(max_size=2000),
    json_values.map(lambda v: json.dumps(v).encode()),
    st.fixed_dictionaries(
        {"action": st.sampled_from(["opened", "closed", "x"]), "issue": json_values}
    ).map(lambda v: json.dumps(v).encode()),
)


def post(source: str, body: bytes, headers: dict[str, str], content_type: str) -> int:
    response = Client().post(f"/hooks/{source}/", body, content_type=content_type, headers=headers)
    return int(response.status_code)


@FUZZ
@given(
    source=st.sampled_from(["gh", "slack", "any", "nope"]),
    body=bodies,
    event=st.sampled_from(["issues", "pull_request", "push", "ping", ""]),
    sign=st.booleans(),
    content_type=st.sampled_from(["application/json", "text/plain"]),
)
def test_endpoint_never_answers_500(
    r: redis.Redis,
    settings: Any,
    source: str,
    body: bytes,
    event: str,
    sign: bool,
    content_type: str,
) -> None:
    settings.STREAMDESK_WEBHOOKS = SOURCES
    settings.STREAMDESK_WEBHOOK_MAX_BYTES = 1500
    headers = github_headers("s" if sign else "t", body, event, "d")
    headers["X-Signature"] = hex_hmac("s" if sign else "t", body)
    assert post(source, body, headers, content_type) in ANSWERS


@FUZZ
@given(
    headers=st.dictionaries(
        st.sampled_from(["X-Hub-Signature-256", "X-Signature", "X-GitHub-Event"]),
        st.text(st.characters(min_codepoint=32, max_codepoint=255), max_size=80),
    )
)
def test_endpoint_never_answers_500_on_odd_headers(
    r: redis.Redis, settings: Any, headers: dict[str, str]
) -> None:
    settings.STREAMDESK_WEBHOOKS = SOURCES
    for source in ("gh", "any"):
        assert post(source, b"{}", headers, "application/json") in ANSWERS
