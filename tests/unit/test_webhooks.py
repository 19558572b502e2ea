"""Webhook core: signatures for real, rotation, replay window, parsing limits, mappings."""

from __future__ import annotations

import json
import time
from typing import Any

import pytest
from redis.crc import key_slot

from tests.support.webhook_signing import (
    github_headers,
    hmac_headers,
    slack_headers,
    stripe_headers,
)
from workers.core.errors import (
    ConfigurationError,
    InvalidEventData,
    PayloadInvalid,
    SignatureInvalid,
)
from workers.core.events import Envelope, event_hash
from workers.core.keys import Keys
from workers.core.registry import Registry
from workers.producers.webhooks.config import WebhookSource, parse_sources
from workers.producers.webhooks.intake import envelope_for, json_depth, parse_json, register_types
from workers.producers.webhooks.mappings import Challenge
from workers.producers.webhooks.replay import OncePublisher, body_digest

SOURCES = parse_sources(
    {
        "gh": {"scheme": "github", "mapping": "github", "secrets": ["old", "new"]},
        "pay": {"scheme": "stripe", "secret": "whsec", "event_type": "payments.event"},
        "any": {"scheme": "hmac", "secret": "s3", "id_header": "X-Delivery"},
        "slack": {"scheme": "slack", "mapping": "slack", "secret": "sl"},
    }
)
ISSUE = {
    "action": "opened",
    "issue": {"number": 7, "title": "Crash", "state": "open", "html_url": "https://x/7"},
    "repository": {"full_name": "acme/api"},
    "sender": {"login": "ada"},
}


def lower(headers: dict[str, str]) -> dict[str, str]:
    return {k.lower(): v for k, v in headers.items()}


def registry() -> Registry:
    reg = Registry()
    register_types(reg, SOURCES.values())
    return reg


def deliver(name: str, body: bytes, headers: dict[str, str]) -> Envelope | Challenge:
    return envelope_for(SOURCES[name], body, lower(headers), now_s=time.time(), registry=registry())


def github(payload: Any, secret: str = "new", event: str = "issues") -> Envelope:
    body = json.dumps(payload).encode()
    env = deliver("gh", body, github_headers(secret, body, event, "d-1"))
    assert isinstance(env, Envelope)
    return env


@pytest.mark.parametrize("secret", ["old", "new"])
def test_github_signature_either_rotation_secret_passes(secret: str) -> None:
    env = github(ISSUE, secret)
    assert (env.type, env.id, env.subject) == ("github.issues.opened", "d-1", "acme/api#7")
    assert env.data["title"] == "Crash" and env.context == {
        "repository": "acme/api",
        "sender": "ada",
    }


def test_github_signature_wrong_secret_is_refused() -> None:
    with pytest.raises(SignatureInvalid, match="does not match"):
        github(ISSUE, "other")


def test_github_signature_missing_is_refused() -> None:
    with pytest.raises(SignatureInvalid, match="X-Hub-Signature-256"):
        deliver("gh", b"{}", {"X-GitHub-Event": "issues"})


def test_non_ascii_signature_is_refused_not_a_crash() -> None:
    with pytest.raises(SignatureInvalid):
        deliver("any", b"{}", {"X-Signature": "sha256=\u00e9\u00e9"})


def test_signature_is_checked_before_parsing() -> None:
    with pytest.raises(SignatureInvalid):
        deliver("gh", b"{not json", {"X-Hub-Signature-256": "sha256=00"})


def test_github_pull_request_and_push_map_to_typed_events() -> None:
    pr = {
        **ISSUE,
        "pull_request": {**ISSUE["issue"], "head": {"ref": "fix"}, "base": {"ref": "main"}},
    }
    env = github(pr, event="pull_request")
    assert env.type == "github.pull_request.opened" and env.data["head"] == "fix"
    push = {"ref": "refs/heads/main", "before": "a", "after": "b", "commits": [{}, {}]}
    env = github({**push, "repository": {"full_name": "acme/api"}}, event="push")
    assert (env.type, env.data["commits"], env.subject) == (
        "github.push",
        2,
        "acme/api@refs/heads/main",
    )


def test_github_other_events_map_to_github_event() -> None:
    env = github({"zen": "hi"}, event="ping")
    assert env.type == "github.event" and env.data["payload"] == {"zen": "hi"}


def test_github_issue_missing_field_names_it() -> None:
    with pytest.raises(InvalidEventData, match=r"data\.number"):
        github({**ISSUE, "issue": {"title": "x", "state": "open", "html_url": "u"}})


def test_stripe_signature_passes_inside_the_window() -> None:
    body = b'{"id": "evt_1", "type": "charge.succeeded"}'
    env = deliver("pay", body, stripe_headers("whsec", body, int(time.time()) - 200))
    assert isinstance(env, Envelope) and env.type == "payments.event"


def test_stripe_stale_timestamp_is_refused() -> None:
    body = b"{}"
    with pytest.raises(SignatureInvalid, match="300 s"):
        deliver("pay", body, stripe_headers("whsec", body, int(time.time()) - 301))


def test_stripe_signature_over_another_timestamp_is_refused() -> None:
    body = b"{}"
    headers = stripe_headers("whsec", body, int(time.time()) - 5)
    headers["Stripe-Signature"] = headers["Stripe-Signature"].replace("t=", "t=1")
    with pytest.raises(SignatureInvalid):
        deliver("pay", body, headers)


def test_generic_hmac_uses_the_delivery_header_as_id() -> None:
    body = b'{"order": 9}'
    env = deliver("any", body, {**hmac_headers("s3", body), "X-Delivery": "x-9"})
    assert isinstance(env, Envelope)
    assert (env.type, env.id, env.data) == ("webhook.any", "x-9", {"order": 9})


def test_generic_without_delivery_id_hashes_the_body() -> None:
    body = b'{"order": 9}'
    first, second = (deliver("any", body, hmac_headers("s3", body)) for _ in range(2))
    assert isinstance(first, Envelope) and isinstance(second, Envelope)
    assert event_hash(first) == event_hash(second)


def test_slack_url_verification_answers_the_challenge() -> None:
    body = b'{"type": "url_verification", "challenge": "abc"}'
    assert deliver("slack", body, slack_headers("sl", body, int(time.time()))) == Challenge("abc")


def test_slack_event_callback_maps_to_slack_message() -> None:
    payload = {
        "type": "event_callback",
        "team_id": "T1",
        "event_id": "Ev1",
        "event": {"type": "message", "channel": "C1", "user": "U1", "text": "hi", "ts": "1.2"},
    }
    body = json.dumps(payload).encode()
    env = deliver("slack", body, slack_headers("sl", body, int(time.time())))
    assert isinstance(env, Envelope)
    assert (env.type, env.id, env.subject, env.data["text"]) == ("slack.message", "Ev1", "C1", "hi")


def test_parse_json_refuses_deep_nesting() -> None:
    with pytest.raises(PayloadInvalid, match="deeper than 64"):
        parse_json(b"[" * 65 + b"]" * 65)
    assert parse_json(b"[" * 64 + b"]" * 64) is not None


def test_json_depth_ignores_brackets_in_strings() -> None:
    assert json_depth(b'{"a": "[[[{\\"}"}') == 1


def test_parse_json_refuses_invalid_utf8() -> None:
    with pytest.raises(PayloadInvalid, match="not UTF-8"):
        parse_json(b'{"a": "\xff"}')


def test_parse_json_refuses_nan() -> None:
    with pytest.raises(PayloadInvalid, match="not valid JSON"):
        parse_json(b'{"a": NaN}')


def test_generic_body_must_be_an_object() -> None:
    body = b"[1]"
    with pytest.raises(PayloadInvalid, match="not an object"):
        deliver("any", body, hmac_headers("s3", body))


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ({"x": {"scheme": "md5", "secret": "s"}}, "scheme must be one of"),
        ({"x": {"scheme": "hmac"}}, "secrets must be"),
        ({"x": {"scheme": "hmac", "secrets": ["a", "b", "c"]}}, "secrets must be"),
        ({"x": {"scheme": "hmac", "secret": "s", "mapping": "jira"}}, "mapping must be"),
        ([], "must be a mapping"),
    ],
)
def test_config_errors_name_the_setting(raw: Any, message: str) -> None:
    with pytest.raises(ConfigurationError, match=message):
        parse_sources(raw)


def test_config_defaults() -> None:
    assert SOURCES["any"] == WebhookSource(
        "any", "hmac", ("s3",), "generic", event_type="webhook.any", id_header="X-Delivery"
    )


def test_real_agent_replaces_a_schema_only_type() -> None:
    reg = registry()
    assert reg.get("github.push").placeholder

    async def handle(event: Any, ctx: Any) -> None:
        return None

    reg.register("github.push", reg.get("github.push").schema, handle)
    assert reg.get("github.push").handler is handle and not reg.get("github.push").placeholder


@pytest.mark.parametrize("stream", ["streamdesk:events", "streamdesk:events:{3}", "a{b{c}d"])
def test_seen_key_is_in_the_stream_cluster_slot(stream: str) -> None:
    seen = Keys().webhook_seen(stream, "ab" * 32)
    assert key_slot(seen.encode()) == key_slot(stream.encode())


def test_body_digest_differs_by_source() -> None:
    assert body_digest("gh", b"{}") != body_digest("shop", b"{}")


def test_replay_window_under_one_second_is_refused() -> None:
    with pytest.raises(ConfigurationError, match="REPLAY_WINDOW_S"):
        OncePublisher(Keys(), 0)
