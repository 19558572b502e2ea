"""Issue 26 items 10 and 7: envelope checks that could be side-stepped (a number that reads
as infinity, bytes that are not UTF-8, NUL in any string attribute), and REDIS_URLs that a
parser misreads, refused without showing any part of the password."""

from __future__ import annotations

import json
from typing import Any

import pytest
from pydantic import BaseModel, ConfigDict

from workers.core.errors import ConfigurationError, EventDecodeError, InvalidEnvelope
from workers.core.events import decode_envelope, strict_loads
from workers.core.registry import Registry
from workers.producers.publish import build_envelope
from workers.producers.webhooks.intake import parse_json
from workers.redis.connection import check_url, password_ends_host

ZEROS_250 = "1" + "0" * 250


class AnyData(BaseModel):
    model_config = ConfigDict(extra="allow")


def entry(data: str) -> bytes:
    return f'{{"type":"t","data":{data}}}'.encode()


# -- a number literal that becomes infinity ---------------------------------------------------


@pytest.mark.parametrize(
    "literal",
    ["1e400", "-1E+400", "1e0400", f"{ZEROS_250}e99", "1" + "0" * 400 + ".5", "2.5e308"],
)
@pytest.mark.parametrize("where", ['{"x":%s}', '{"x":[1, %s]}', '{"a":{"b": %s}}'])
def test_decode_refuses_a_number_that_overflows_to_infinity(literal: str, where: str) -> None:
    with pytest.raises(EventDecodeError, match="out of a float's range"):
        decode_envelope(entry(where % literal))


@pytest.mark.parametrize("field", ["context", "ext"])
def test_decode_refuses_overflow_outside_data_too(field: str) -> None:
    raw = f'{{"type":"t","data":{{}},"{field}":{{"x": 1e999}}}}'.encode()
    with pytest.raises(EventDecodeError, match="out of a float's range"):
        decode_envelope(raw)


@pytest.mark.parametrize(
    "data",
    [
        '{"x":1e-400}',
        '{"x":1.7e308}',
        '{"x":"1e400"}',
        '{"sha":"3e4019ab"}',
        '{"n":' + "9" * 400 + "}",
    ],
)
def test_decode_keeps_finite_numbers_and_look_alike_text(data: str) -> None:
    assert decode_envelope(entry(data)).data == json.loads(data)


def test_strict_loads_refuses_overflow_as_the_cli_reads_data() -> None:
    with pytest.raises(ValueError, match="out of a float's range"):
        strict_loads('{"x": -1e400}')


def test_webhook_body_that_overflows_is_invalid() -> None:
    from workers.core.errors import PayloadInvalid

    with pytest.raises(PayloadInvalid, match="out of a float's range"):
        parse_json(b'{"amount": 1e400}')


@pytest.mark.parametrize("bad", [float("inf"), float("-inf"), float("nan")])
@pytest.mark.parametrize("field", ["data", "context"])
def test_publish_refuses_python_non_finite_floats(bad: float, field: str) -> None:
    """pydantic writes them as null: the event would change on its way."""
    registry = Registry()
    registry.register("t", AnyData, lambda event, ctx: None)
    nested: dict[str, Any] = {"a": [{"b": bad}]}
    data, context = (nested, None) if field == "data" else ({}, nested)
    with pytest.raises(InvalidEnvelope, match=rf"{field}\.a\.0\.b: NaN and infinity"):
        build_envelope("t", data, registry=registry, context=context)


# -- bytes that are not UTF-8 -------------------------------------------------------------------


def test_bytes_not_utf8_read_by_the_engine_client_are_a_decode_error() -> None:
    """The engine reads with ``surrogateescape``: each bad byte is kept, so two entries that
    differ only there can no longer become one event with one hash (U+FFFD for both)."""
    for byte in (b"\xff", b"\xfe", b"\xc3("):
        raw = entry('{"x":"a' + "\x00" + '"}').replace(b"\x00", byte)
        text = raw.decode("utf-8", "surrogateescape")
        with pytest.raises(EventDecodeError, match="not UTF-8"):
            decode_envelope(text)
        with pytest.raises(EventDecodeError):
            decode_envelope(raw)


# -- NUL in any string attribute ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("extra", "named"),
    [
        ('"specversion":"1.0\\u0000"', "specversion"),
        ('"traceparent":"00-\\u0000"', "traceparent"),
        ('"ext\\u0000":"x"', "ext\\x00"),
        ('"ext":{"k":["ok","\\u0000"]}', "ext"),
        ('"ext":{"k\\u0000":1}', "ext"),
    ],
)
def test_nul_is_refused_in_every_string_attribute(extra: str, named: str) -> None:
    raw = f'{{"type":"t","data":{{}},{extra}}}'.encode()
    with pytest.raises(InvalidEnvelope, match="must not contain the NUL") as caught:
        decode_envelope(raw)
    assert str(caught.value).startswith(f"{named} must not")


def test_nul_in_data_and_context_still_reaches_the_agent() -> None:
    raw = b'{"type":"t","data":{"x":"\\u0000"},"context":{"y":"\\u0000"},"ext":"fine"}'
    envelope = decode_envelope(raw)
    assert envelope.data == {"x": "\x00"} and envelope.context == {"y": "\x00"}


# -- REDIS_URL ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "url",
    [
        "redis://:Zq/Xk-s3cret9@127.0.0.1:6379/0",
        "redis://:Zq#Xk-s3cret9@127.0.0.1:6379/0",
        "redis://:Zq?Xk-s3cret9@127.0.0.1:6379/0",
        "redis://:Zq?s=Xk-s3cret9@127.0.0.1:6379/0",
        "redis://user:12/Xk-s3cret9@127.0.0.1:6379/0",
        "rediss://default:Zq/Xk-s3cret9@host.example:6380",
        "unix://:Zq/Xk-s3cret9@/tmp/redis.sock",
    ],
)
def test_a_password_the_url_cannot_hold_is_refused_unshown(url: str) -> None:
    with pytest.raises(ConfigurationError, match="percent-encode") as caught:
        check_url(url)
    message = str(caught.value)
    password = url.split("//", 1)[1].rsplit("@", 1)[0].split(":", 1)[1]
    for part in (password, password[:2], "Xk-s3cret9"):
        assert part not in message


@pytest.mark.parametrize(
    ("url", "says"),
    [
        ("redis://127.0.0.1:abc/0", "the port is not a number"),
        ("redis://127.0.0.1:99999/0", "the port is not a number"),
        ("redis://127.0.0.1:0/0", "the port is not a number"),
        ("redis://127.0.0.1:6379/x", "the database is not a number"),
        ("redis://127.0.0.1:6379/-1", "the database is not a number"),
        ("redis://127.0.0.1:6379/1/2", "the database is not a number"),
        ("redis://127.0.0.1:6379/0?db=x", "Invalid value for 'db'"),
        ("http://127.0.0.1:6379", "must start with redis://"),
        ("redis://[::1:6379/0", "Invalid IPv6 URL"),
    ],
)
def test_bad_ports_and_databases_are_configuration_errors(url: str, says: str) -> None:
    with pytest.raises(ConfigurationError, match=f"^REDIS_URL.*{says}"):
        check_url(url)


@pytest.mark.parametrize(
    "url",
    [
        "redis://localhost",
        "redis://127.0.0.1:6379/0",
        "redis://:pa%2Fss%23word%40x@127.0.0.1:6379/15",
        "rediss://default:pw@redis.example:6380/",
        "redis://127.0.0.1:6379?db=3",
        "redis://[::1]:6379/0",
        "unix:///tmp/redis.sock?db=1",
    ],
)
def test_well_formed_urls_pass_unchanged(url: str) -> None:
    assert check_url(url) == url


@pytest.mark.parametrize(
    "url",
    ["unix:///run/a@b.sock", "sqlite:////srv/u@x/db.sqlite3", "redis://u%2Fx:p%40w@h:1/0"],
)
def test_an_at_sign_in_a_path_with_no_host_part_is_no_password(url: str) -> None:
    assert not password_ends_host(url)
