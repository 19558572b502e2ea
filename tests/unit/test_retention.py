"""Retention's pure parts: the settings and their checks, how they read, the trim's record
and reply, and the oldest entry's age as a metric."""

from __future__ import annotations

import pytest

from workers.core import config as engine_config
from workers.core.config import EngineConfig, options_from_env
from workers.core.errors import ConfigurationError
from workers.monitor.prometheus import stream_families
from workers.monitor.sample import Sample, StreamInfo
from workers.retention import Retention, Trim, TrimRecord, entry_ms
from workers.retention.policy import span

VARIABLES = ("STREAMDESK_RETENTION_S", "STREAMDESK_MAX_LEN")


def test_retention_defaults_to_a_week_and_no_length_cap(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in VARIABLES:
        monkeypatch.delenv(name, raising=False)
    config = EngineConfig.from_mapping(options_from_env())
    assert Retention.of(config) == Retention(7 * 86_400, 0)
    assert config.retention_s == config.done_ttl_s  # gate records outlive the entries


@pytest.mark.parametrize(("raw", "value"), [("0", 0), ("3600", 3600)])
def test_retention_settings_from_env(monkeypatch: pytest.MonkeyPatch, raw: str, value: int) -> None:
    monkeypatch.setenv("STREAMDESK_RETENTION_S", raw)
    monkeypatch.setenv("STREAMDESK_MAX_LEN", raw)
    config = EngineConfig.from_mapping(options_from_env())
    assert (config.retention_s, config.max_len) == (value, value)


@pytest.mark.parametrize("name", VARIABLES)
@pytest.mark.parametrize("raw", ["-1", "7d", "1.5"])
def test_retention_settings_refuse_nonsense_naming_the_variable(
    monkeypatch: pytest.MonkeyPatch, name: str, raw: str
) -> None:
    monkeypatch.setenv(name, raw)
    with pytest.raises(ConfigurationError, match=name):
        options_from_env()


@pytest.mark.parametrize("option", ["retention_s", "max_len"])
def test_retention_options_refuse_a_negative_value(option: str) -> None:
    with pytest.raises(ConfigurationError, match=f"{option} must be >= 0"):
        engine_config.EngineConfig(**{option: -1})


@pytest.mark.parametrize(
    ("retention", "text"),
    [
        (Retention(7 * 86_400), "keeps 7 d"),
        (Retention(5400, 1_000_000), "keeps 90 min, at most 1,000,000 entries"),
        (Retention(0, 500), "keeps any age, at most 500 entries"),
        (Retention(0, 0), "keeps everything (no retention, no length cap)"),
    ],
)
def test_retention_describes_itself(retention: Retention, text: str) -> None:
    assert retention.describe() == text


def test_retention_span_picks_the_largest_whole_unit() -> None:
    assert [span(s) for s in (86_400 * 2, 7200, 5400, 90, 45, 5401)] == [
        "2 d",
        "2 h",
        "90 min",
        "90 s",
        "45 s",
        "1.5 h",
    ]


def test_retention_record_parses_what_the_script_writes() -> None:
    fields = {
        "at_ms": "1700000000000",
        "by": "host-1",
        "retention_ms": "3600000",
        "max_len": "0",
        "trimmed": "12",
        "trimmed_total": "40",
        "cut": "1699999000000-0",
        "held_by": "agents",
        "note": "",
        "next_ms": "1700000060000",
    }
    record = TrimRecord.parse(fields)
    assert record is not None
    assert (record.retention, record.trimmed, record.trimmed_total) == (Retention(3600), 12, 40)
    assert record.held_by == "agents" and record.by == "host-1"


@pytest.mark.parametrize("fields", [{}, None, {"at_ms": "soon"}, ValueError("WRONGTYPE")])
def test_retention_record_absent_or_garbled_is_none(fields: object) -> None:
    assert TrimRecord.parse(fields) is None


def test_retention_trim_reply_reads_both_shapes() -> None:
    assert Trim.of(["later"]) == Trim("later")
    done = Trim.of(["trimmed", 3, "5-0", 0, "5-0", "g", ""])
    assert (done.trimmed, done.cut, done.held_by) == (3, "5-0", "g")


@pytest.mark.parametrize(
    ("entry_id", "ms"), [("1700-3", 1700), ("42", 42), ("", None), (None, None)]
)
def test_retention_entry_ms_is_the_ids_clock(entry_id: str | None, ms: int | None) -> None:
    assert entry_ms(entry_id) == ms


def _oldest_ages(first_id: str | None) -> list[tuple[dict[str, str], float]]:
    stream = StreamInfo("s", True, 3, 3, "9-0", 0, {}, [], first_id=first_id)
    sample = Sample(at_ms=61_000, streams=[stream], workers=[])
    families = {f.name: f for f in stream_families(sample)}
    family = families["streamdesk_stream_oldest_entry_age_seconds"]
    return [(s.labels, s.value) for s in family.samples]


def test_retention_oldest_entry_age_metric_from_the_first_id() -> None:
    assert _oldest_ages("1000-0") == [({"stream": "s"}, 60.0)]
    assert _oldest_ages(None) == []  # an empty stream reaches back nowhere: no series
