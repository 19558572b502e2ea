"""Publishing: validation first, nothing written on error; the CLI prints entry ids."""

from __future__ import annotations

import json
from io import StringIO

import pytest
import redis
from django.core.management import CommandError, call_command

from workers import publish
from workers.core.errors import InvalidEnvelope, InvalidEventData, UnknownEventType
from workers.core.events import decode_envelope, event_hash

STREAM = "streamdesk:events"


def test_publish_writes_a_full_envelope(r: redis.Redis) -> None:
    entry_id = publish("demo.echo", {"n": 1}, subject="order/1", context={"tier": "gold"})
    [(got_id, fields)] = r.xrange(STREAM)
    assert got_id == entry_id
    env = decode_envelope(fields["event"])
    assert (env.type, env.source, env.subject, env.context) == (
        "demo.echo",
        "app",
        "order/1",
        {"tier": "gold"},
    )
    assert env.id and env.time and env.specversion == "1.0"


def test_publish_unknown_type_writes_nothing(r: redis.Redis) -> None:
    with pytest.raises(UnknownEventType, match=r"no\.such"):
        publish("no.such", {})
    assert not r.exists(STREAM)


def test_publish_invalid_data_names_the_field_and_writes_nothing(r: redis.Redis) -> None:
    with pytest.raises(InvalidEventData, match=r"data\.ms"):
        publish("demo.sleep", {"ms": "soon"})
    assert not r.exists(STREAM)


def test_publish_nul_in_an_attribute_is_refused_and_writes_nothing(r: redis.Redis) -> None:
    with pytest.raises(InvalidEnvelope, match=r"^subject must not contain the NUL character"):
        publish("demo.echo", {}, subject="order\x00 42")
    assert not r.exists(STREAM)


def test_publish_key_sets_the_hash(r: redis.Redis) -> None:
    publish("demo.echo", {}, key="order-7-paid", source="billing")
    env = decode_envelope(r.xrange(STREAM)[0][1]["event"])
    assert env.idempotencykey == "order-7-paid"
    assert event_hash(env) == event_hash(env.model_copy(update={"id": "other"}))


def test_cli_prints_one_entry_id_per_line(r: redis.Redis) -> None:
    out = StringIO()
    call_command(
        "publish",
        "demo.echo",
        "--data",
        '{"n": 2}',
        "--count",
        "3",
        "--id",
        "same",
        "--subject",
        "s",
        stdout=out,
    )
    ids = out.getvalue().split()
    assert ids == [i for i, _ in r.xrange(STREAM)]
    events = [json.loads(f["event"]) for _, f in r.xrange(STREAM)]
    assert {e["id"] for e in events} == {"same"} and events[0]["source"] == "cli"


def test_cli_rejects_bad_json(r: redis.Redis) -> None:
    with pytest.raises(CommandError, match="--data is not valid JSON"):
        call_command("publish", "demo.echo", "--data", "{nope")


def test_cli_rejects_nan_in_data(r: redis.Redis) -> None:
    with pytest.raises(CommandError, match="--data is not valid JSON: NaN is not a JSON number"):
        call_command("publish", "demo.echo", "--data", '{"n": NaN}')
    assert not r.exists(STREAM)


def test_cli_rejects_invalid_data(r: redis.Redis) -> None:
    with pytest.raises(CommandError, match=r"data\.ms"):
        call_command("publish", "demo.sleep", "--data", '{"ms": -1}')
    assert not r.exists(STREAM)
