"""Credentials never leave in a printed URL or a log line."""

from __future__ import annotations

import io
import logging
import sys

import pytest

from workers.core.logs import JsonFormatter, TextFormatter
from workers.core.redact import redact_text, redact_url


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        ("redis://default:s3cret@db:6379/0", "redis://default:***@db:6379/0"),
        ("rediss://:s3cret@db:6380", "rediss://:***@db:6380"),
        ("postgres://app:s3cret@db:5432/app", "postgres://app:***@db:5432/app"),
        ("redis://u:s3/cr@t@db:6379/0", "redis://u:***@db:6379/0"),
        ("redis://db:6379/0?password=s3cret", "redis://db:6379/0?password=***"),
        (
            "postgres://app@db/app?sslmode=require&sslpassword=s3cret",
            "postgres://app@db/app?sslmode=require&sslpassword=***",
        ),
    ],
)
def test_redact_url_masks_the_password(url: str, shown: str) -> None:
    assert redact_url(url) == shown


@pytest.mark.parametrize(
    "url",
    ["redis://db:6379/0", "redis://app@db:6379/0", "unix:///srv/valkey.sock", "not a url", ""],
)
def test_redact_url_keeps_urls_without_credentials(url: str) -> None:
    assert redact_url(url) == url


def test_redact_text_masks_urls_and_secret_pairs_in_prose() -> None:
    text = (
        "cannot reach Redis at redis://default:s3cret@db:6379/0: Error 111; "
        "dsn host=db password=hunter2 LLMConfig(api_key='sk-live-1') token=7 key=streamdesk:x"
    )
    shown = redact_text(text)
    assert "s3cret" not in shown and "hunter2" not in shown and "sk-live-1" not in shown
    assert "redis://default:***@db:6379/0" in shown
    assert "token=7 key=streamdesk:x" in shown  # fencing tokens and keys are no secrets


@pytest.mark.parametrize("formatter", [TextFormatter(), JsonFormatter()])
def test_log_formatters_redact_urls_in_messages_and_fields(formatter: logging.Formatter) -> None:
    out = io.StringIO()
    handler = logging.StreamHandler(out)
    handler.setFormatter(formatter)
    log = logging.getLogger("tests.redact")
    log.addHandler(handler)
    try:
        log.warning(
            "lost %s", "redis://default:s3cret@db:6379/0", extra={"url": "redis://:pw2@db:1/0"}
        )
    finally:
        log.removeHandler(handler)
    line = out.getvalue()
    assert "s3cret" not in line and "pw2" not in line
    assert "redis://default:***@db:6379/0" in line


def test_log_formatters_redact_urls_in_tracebacks() -> None:
    try:
        raise ConnectionError("cannot reach redis://default:s3cret@db:6379/0")
    except ConnectionError:
        record = logging.LogRecord("t", logging.ERROR, __file__, 1, "failed", None, None)
        record.exc_info = sys.exc_info()
    assert "s3cret" not in TextFormatter().format(record)
    assert "s3cret" not in JsonFormatter().format(record)
