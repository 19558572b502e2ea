"""POST /hooks/<source>/ through Django: every answer, signatures computed for real."""

from __future__ import annotations

import json
import time
from collections import Counter
from typing import Any

import pytest
import redis
from django.test import Client

from tests.support.engine import counters, run_burst
from tests.support.replication import replicated
from tests.support.webhook_signing import (
    github_headers,
    hmac_headers,
    slack_headers,
    stripe_headers,
)
from workers.core.config import EngineConfig
from workers.core.errors import ConfigurationError
from workers.core.events import decode_envelope, event_hash
from workers.core.registry import Registry
from workers.producers.webhooks.config import parse_sources
from workers.producers.webhooks.intake import register_types
from workers.producers.webhooks.schemas import GitHubIssue

STREAM = "streamdesk:events"
SOURCES = {
    "gh": {"scheme": "github", "mapping": "github", "secrets": ["old", "new"]},
    "pay": {"scheme": "stripe", "secret": "whsec", "event_type": "payments.event"},
    "any": {"scheme": "hmac", "secret": "s3", "id_header": "X-Delivery"},
    "slack": {"scheme": "slack", "mapping": "slack", "secret": "sl"},
}
ISSUE = {
    "action": "opened",
    "issue": {"number": 7, "title": "Crash", "state": "open", "html_url": "https://x/7"},
    "repository": {"full_name": "acme/api"},
    "sender": {"login": "ada"},
}


@pytest.fixture(autouse=True)
def _sources(settings: Any) -> None:
    settings.STREAMDESK_WEBHOOKS = SOURCES


def post(source: str, body: bytes, headers: dict[str, str], **kwargs: Any) -> Any:
    content_type = kwargs.pop("content_type", "application/json")
    return Client().post(
        f"/hooks/{source}/", body, content_type=content_type, headers=headers, **kwargs
    )


def post_issue(payload: Any = ISSUE, secret: str = "new", delivery: str = "d-1") -> Any:
    body = json.dumps(payload).encode()
    return post("gh", body, github_headers(secret, body, "issues", delivery))


def test_github_issue_is_202_after_xadd_with_the_ids(r: redis.Redis) -> None:
    response = post_issue()
    assert response.status_code == 202
    [(entry_id, fields)] = r.xrange(STREAM)
    env = decode_envelope(fields["event"])
    assert response.json() == {"id": "d-1", "entry_id": entry_id, "hash": event_hash(env)}
    assert (env.type, env.source, env.subject) == ("github.issues.opened", "gh", "acme/api#7")


@pytest.mark.parametrize("secret", ["old", "new"])
def test_either_rotation_secret_is_accepted(r: redis.Redis, secret: str) -> None:
    assert post_issue(secret=secret).status_code == 202


def test_bad_signature_is_401_and_writes_nothing(r: redis.Redis) -> None:
    response = post_issue(secret="guess")
    assert response.status_code == 401 and "does not match" in response.json()["error"]
    assert not r.exists(STREAM)


def test_missing_signature_is_401(r: redis.Redis) -> None:
    assert post("gh", b"{}", {"X-GitHub-Event": "issues"}).status_code == 401


def test_stripe_signature_in_the_window_is_202(r: redis.Redis) -> None:
    body = b'{"id": "evt_1"}'
    response = post("pay", body, stripe_headers("whsec", body, int(time.time())))
    assert response.status_code == 202


def test_stripe_stale_timestamp_is_401(r: redis.Redis) -> None:
    body = b'{"id": "evt_1"}'
    response = post("pay", body, stripe_headers("whsec", body, int(time.time()) - 301))
    assert response.status_code == 401 and "300 s" in response.json()["error"]


def test_generic_hmac_is_202(r: redis.Redis) -> None:
    body = b'{"order": 1}'
    response = post("any", body, {**hmac_headers("s3", body), "X-Delivery": "o-1"})
    assert response.status_code == 202 and response.json()["id"] == "o-1"


def test_unknown_source_is_404(r: redis.Redis) -> None:
    assert post("nope", b"{}", {}).status_code == 404


def test_wrong_content_type_is_415(r: redis.Redis) -> None:
    assert (
        post("any", b"a=1", {}, content_type="application/x-www-form-urlencoded").status_code == 415
    )


def test_over_the_limit_is_413(r: redis.Redis, settings: Any) -> None:
    settings.STREAMDESK_WEBHOOK_MAX_BYTES = 100
    body = json.dumps({"pad": "x" * 100}).encode()
    assert post("any", body, hmac_headers("s3", body)).status_code == 413
    assert not r.exists(STREAM)


def test_get_is_405(r: redis.Redis) -> None:
    assert Client().get("/hooks/any/").status_code == 405


@pytest.mark.parametrize(
    ("body", "error"),
    [
        (b"{nope", "not valid JSON"),
        (b'{"a": "\xff"}', "not UTF-8"),
        (b"[" * 65 + b"]" * 65, "deeper than 64"),
        (b'"just a string"', "not an object"),
    ],
)
def test_bad_body_is_400(r: redis.Redis, body: bytes, error: str) -> None:
    response = post("any", body, hmac_headers("s3", body))
    assert response.status_code == 400 and error in response.json()["error"]


def test_payload_failing_its_schema_is_400_naming_the_field(r: redis.Redis) -> None:
    issue = {**ISSUE, "issue": {"title": "x", "state": "open", "html_url": "u"}}
    response = post_issue(issue)
    assert response.status_code == 400 and "data.number" in response.json()["error"]
    assert not r.exists(STREAM)


def test_redis_down_is_503_with_retry_after(r: redis.Redis, settings: Any) -> None:
    settings.REDIS_URL = "redis://127.0.0.1:1/0"
    response = post_issue()
    assert response.status_code == 503 and response["Retry-After"] == "5"
    assert not r.exists(STREAM)


def test_slack_url_verification_answers_the_challenge(r: redis.Redis) -> None:
    body = b'{"type": "url_verification", "challenge": "3eZbrw1a"}'
    response = post("slack", body, slack_headers("sl", body, int(time.time())))
    assert response.status_code == 200 and response.json() == {"challenge": "3eZbrw1a"}
    assert not r.exists(STREAM)


@pytest.mark.django_db(transaction=True)
def test_redelivery_after_the_replay_window_is_published_and_the_gate_runs_it_once(
    r: redis.Redis, redis_url: str, config: EngineConfig
) -> None:
    first = post_issue(delivery="same")
    r.delete(*r.keys("streamdesk:webhooks:seen:*"))  # as if the window had passed
    second = post_issue(delivery="same")
    assert (first.status_code, second.status_code) == (202, 202)
    assert first.json()["hash"] == second.json()["hash"]
    assert first.json()["entry_id"] != second.json()["entry_id"]

    runs: Counter[str] = Counter()
    registry = Registry()
    register_types(registry, parse_sources(SOURCES).values())

    @registry.agent("github.issues.opened", schema=GitHubIssue)
    async def count(event: Any, ctx: Any) -> None:
        runs[event.hash] += 1

    run_burst(redis_url, config, registry)
    assert list(runs.values()) == [1]
    assert counters(r)["idempotency_hits"] == 1


def test_replay_with_a_new_delivery_id_is_2xx_and_not_published(r: redis.Redis) -> None:
    first, replay = post_issue(delivery="d-1"), post_issue(delivery="d-2")
    assert (first.status_code, replay.status_code) == (202, 200)
    assert replay.json()["duplicate"] is True
    assert replay.json()["entry_id"] == first.json()["entry_id"]
    assert replay.json()["hash"] == first.json()["hash"]
    assert r.xlen(STREAM) == 1


def test_replay_under_another_github_event_name_is_a_duplicate(r: redis.Redis) -> None:
    body = json.dumps(ISSUE).encode()
    post("gh", body, github_headers("new", body, "issues", "d-1"))
    replay = post("gh", body, github_headers("new", body, "release", "d-2"))
    assert replay.status_code == 200 and replay.json()["duplicate"] is True
    assert r.xlen(STREAM) == 1


def test_generic_replay_with_a_new_id_header_is_a_duplicate(r: redis.Redis) -> None:
    body = b'{"order": 1}'
    post("any", body, {**hmac_headers("s3", body), "X-Delivery": "o-1"})
    replay = post("any", body, {**hmac_headers("s3", body), "X-Delivery": "o-2"})
    assert replay.status_code == 200 and replay.json()["duplicate"] is True
    assert r.xlen(STREAM) == 1


def test_stripe_retry_with_a_new_timestamp_is_a_duplicate(r: redis.Redis) -> None:
    body = b'{"id": "evt_1"}'
    now = int(time.time())
    post("pay", body, stripe_headers("whsec", body, now - 60))
    retry = post("pay", body, stripe_headers("whsec", body, now))
    assert retry.status_code == 200 and r.xlen(STREAM) == 1


def test_different_bodies_are_each_published(r: redis.Redis) -> None:
    post_issue(delivery="d-1")
    other = post_issue({**ISSUE, "action": "closed"}, delivery="d-2")
    assert other.status_code == 202 and r.xlen(STREAM) == 2


def test_replay_is_logged_as_a_duplicate(r: redis.Redis, caplog: Any) -> None:
    post_issue(delivery="d-1")
    with caplog.at_level("INFO", logger="streamdesk.webhooks"):
        post_issue(delivery="d-2")
    assert "d-2 repeats a body published as" in caplog.text


def test_seen_body_is_remembered_for_the_configured_window(r: redis.Redis, settings: Any) -> None:
    settings.STREAMDESK_WEBHOOK_REPLAY_WINDOW_S = 90
    post_issue()
    [key] = r.keys("streamdesk:webhooks:seen:*")
    assert 80 < r.ttl(key) <= 90


def test_redis_down_503_body_names_no_server_or_password(r: redis.Redis, settings: Any) -> None:
    settings.REDIS_URL = "redis://default:hunter2@127.0.0.1:1/0"
    response = post_issue()
    assert response.status_code == 503
    assert response.json() == {"error": "the event could not be stored; retry later"}


def test_redis_down_cause_is_logged_without_the_password(
    r: redis.Redis, settings: Any, caplog: Any
) -> None:
    settings.REDIS_URL = "redis://default:hunter2@127.0.0.1:1/0"
    with caplog.at_level("ERROR", logger="streamdesk.webhooks"):
        post_issue()
    assert "not published" in caplog.text and "hunter2" not in caplog.text


def test_a_durable_source_answers_202_only_once_a_replica_holds_the_event(
    r: redis.Redis, settings: Any
) -> None:
    settings.STREAMDESK_WEBHOOKS = {**SOURCES, "any": {**SOURCES["any"], "durable": True}}
    with replicated() as pair:
        settings.REDIS_URL = pair.primary.url
        body = b'{"order": 1}'
        response = post("any", body, {**hmac_headers("s3", body), "X-Delivery": "o-1"})
        assert response.status_code == 202
        entry_id = response.json()["entry_id"]
        with pair.replica_client() as replica:
            assert replica.xrange(STREAM, entry_id, entry_id)
        pair.stop_replica()
        body = b'{"order": 2}'
        response = post("any", body, {**hmac_headers("s3", body), "X-Delivery": "o-2"})
        assert response.status_code == 503 and response["Retry-After"] == "5"


def test_durable_must_be_true_or_false() -> None:
    with pytest.raises(ConfigurationError, match=r"\['any'\]\.durable must be true or false"):
        parse_sources({"any": {**SOURCES["any"], "durable": "yes"}})
