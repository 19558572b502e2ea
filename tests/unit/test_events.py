from __future__ import annotations

import hashlib
import json

import pytest

from workers.core.errors import EventDecodeError, EventTooLarge, InvalidEnvelope
from workers.core.events import Envelope, canonical_json, decode_envelope, event_hash


def sha(parts: list[object]) -> str:
    raw = json.dumps(parts, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(raw.encode()).hexdigest()


def test_hash_uses_idempotency_key_first() -> None:
    env = Envelope(type="t", source="s", id="i", subject="x", data={"a": 1}, idempotencykey="k")
    assert event_hash(env) == sha(["s", "t", "k"])


def test_hash_uses_id_without_key() -> None:
    env = Envelope(type="t", source="s", id="i", subject="x", data={"a": 1})
    assert event_hash(env) == sha(["s", "t", "i"])


def test_hash_uses_subject_and_data_without_id() -> None:
    env = Envelope(type="t", source="s", subject="x", data={"b": 2, "a": 1})
    assert event_hash(env) == sha(["s", "t", "x", {"a": 1, "b": 2}])


def test_hash_ignores_key_order_and_time() -> None:
    one = decode_envelope('{"type":"t","data":{"a":1,"b":[1,2]},"time":"2026-01-01T00:00:00Z"}')
    two = decode_envelope('{"data":{"b":[1,2],"a":1},"type":"t"}')
    assert event_hash(one) == event_hash(two)


def test_hash_default_source_is_unknown() -> None:
    env = decode_envelope('{"type":"t","id":"1","data":{}}')
    assert env.source == "unknown"
    assert event_hash(env) == sha(["unknown", "t", "1"])


def test_canonical_json_is_compact_sorted_utf8() -> None:
    assert canonical_json({"b": "é", "a": 1}) == '{"a":1,"b":"é"}'.encode()


def test_decode_not_json() -> None:
    with pytest.raises(EventDecodeError, match="not JSON"):
        decode_envelope("not json")


def test_decode_not_an_object() -> None:
    with pytest.raises(EventDecodeError, match="list, not an object"):
        decode_envelope("[1, 2]")


def test_decode_missing_field() -> None:
    with pytest.raises(EventDecodeError, match="no 'event' field"):
        decode_envelope(None)


def test_decode_no_type_names_the_field() -> None:
    with pytest.raises(InvalidEnvelope, match=r"^type: Field required"):
        decode_envelope('{"data": {}}')


def test_decode_wrong_data_type_names_the_field() -> None:
    with pytest.raises(InvalidEnvelope, match=r"^data: "):
        decode_envelope('{"type": "t", "data": [1]}')


def test_decode_too_large() -> None:
    big = json.dumps({"type": "t", "data": {"blob": "x" * 2_000_000}})
    with pytest.raises(EventTooLarge, match="over the limit"):
        decode_envelope(big)


def test_envelope_keeps_extension_attributes() -> None:
    env = decode_envelope('{"type": "t", "data": {}, "traceparent": "00-ab"}')
    assert json.loads(env.to_json())["traceparent"] == "00-ab"
