"""Issue 26, item 7: configured secret values are masked in every text, whatever surrounds them.

``workers.core.redact`` keeps one registry of secret values, filled where the configuration is
built; ``redact_text`` (log formatters, reports) and ``describe`` (error texts) mask them.
"""

from __future__ import annotations

import io
import json
import logging
import secrets
import sys
from html import escape
from urllib.parse import quote

from django.conf import settings
from django.test import override_settings

from console.edge.errorreport import SecretsReporter, register_configured_secrets
from workers.core.logs import JsonFormatter, TextFormatter
from workers.core.redact import MASK, mask_secrets, redact_text, register_secrets
from workers.core.storable import describe


def fresh(prefix: str = "sk-") -> str:
    """A value no other test registered: each test proves its own registration."""
    return f"{prefix}{secrets.token_hex(12)}"


def test_register_secrets_masks_the_value_wherever_it_appears() -> None:
    key = fresh()
    assert mask_secrets(f"401: {key}") == f"401: {key}"
    register_secrets(key)
    assert mask_secrets(f"401: Incorrect API key provided: {key}.") == (
        f"401: Incorrect API key provided: {MASK}."
    )
    assert redact_text(f"{key}{key}") == MASK * 2


def test_register_secrets_ignores_empty_and_short_values() -> None:
    register_secrets("", None, "admin")  # "admin" would mask the word on every page
    assert mask_secrets("admin logged in as admin") == "admin logged in as admin"


def test_a_secret_is_masked_in_its_escaped_spellings() -> None:
    key = fresh('pa"ss/é+') + "&<x>"
    register_secrets(key)
    json_line = JsonFormatter().format(logging.makeLogRecord({"msg": f"echo {key}"}))
    assert json.dumps(key)[1:-1] not in json_line and MASK in json_line
    for spelling in (key, quote(key, safe=""), escape(key)):
        assert mask_secrets(f"<{spelling}>") == f"<{MASK}>"


def test_a_longer_secret_holding_a_shorter_one_is_masked_whole() -> None:
    short = fresh()
    register_secrets(short, f"{short}-and-more")
    assert mask_secrets(f"[{short}-and-more]") == f"[{MASK}]"


def test_describe_masks_the_secret_before_it_bounds_the_text() -> None:
    key = fresh()
    register_secrets(key)
    try:
        raise RuntimeError(f"401: Incorrect API key provided: {key}")
    except RuntimeError as exc:
        text = describe(exc)
    assert key not in text and f"provided: {MASK}" in text
    # A key at the cut of a huge error is not left half-shown.
    try:
        raise RuntimeError("x" * 3990 + key + "y" * 8000)
    except RuntimeError as exc:
        bounded = describe(exc, limit=8000)
    assert key[: len(key) // 2] not in bounded


def test_log_lines_mask_a_secret_in_the_message_and_the_traceback() -> None:
    key = fresh()
    register_secrets(key)
    try:
        raise ValueError(f"echoed {key}")
    except ValueError:
        record = logging.makeLogRecord(
            {"msg": "failed: %s", "args": (key,), "exc_info": sys.exc_info(), "levelno": 30}
        )
    for formatter in (JsonFormatter(), TextFormatter()):
        assert key not in formatter.format(record)


def test_the_settings_secrets_are_registered_at_start_up() -> None:
    # ConsoleConfig.ready registered them: no call here.
    shown = redact_text(f"key {settings.SECRET_KEY} and hook dev-webhook-secret")
    assert settings.SECRET_KEY not in shown and "dev-webhook-secret" not in shown


def test_every_webhook_secret_of_a_rotation_is_registered() -> None:
    old, new = fresh("whsec-"), fresh("whsec-")
    hooks = {"gh": {"scheme": "github", "secrets": [old, new]}}
    with override_settings(STREAMDESK_WEBHOOKS=hooks, STREAMDESK_METRICS_TOKEN=fresh()):
        register_configured_secrets()
        token = settings.STREAMDESK_METRICS_TOKEN
        assert redact_text(f"{old} {new} {token}") == f"{MASK} {MASK} {MASK}"


def test_the_debug_report_masks_a_secret_in_the_exception_message() -> None:
    key = fresh()
    register_secrets(key)
    try:
        raise RuntimeError(f"echoed <{key}>")
    except RuntimeError:
        report = SecretsReporter(None, *sys.exc_info())
        text, page = report.get_traceback_text(), report.get_traceback_html()
    assert key not in text and key not in page and MASK in page


def test_a_log_line_without_secrets_is_unchanged() -> None:
    out = io.StringIO()
    handler = logging.StreamHandler(out)
    handler.setFormatter(TextFormatter())
    logger = logging.getLogger("tests.issue26.plain")
    logger.addHandler(handler)
    try:
        logger.warning("token=7 key=streamdesk:x admin")
    finally:
        logger.removeHandler(handler)
    assert out.getvalue().rstrip().endswith("token=7 key=streamdesk:x admin")
