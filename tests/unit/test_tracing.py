"""The pure parts of tracing: reading a traceparent, switching on only when asked."""

from __future__ import annotations

import logging
import re

import pytest

from console.views.events import trace_url
from workers.core import tracing
from workers.core.errors import ConfigurationError

TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736"


@pytest.mark.parametrize(
    ("traceparent", "trace_id"),
    [
        (f"00-{TRACE_ID}-00f067aa0ba902b7-01", TRACE_ID),
        (f"00-{TRACE_ID.upper()}-00f067aa0ba902b7-01", TRACE_ID),
        ("00-" + "0" * 32 + "-00f067aa0ba902b7-01", None),
        ("00-xyz-00f067aa0ba902b7-01", None),
        ("garbage", None),
        (None, None),
    ],
)
def test_trace_id_of_reads_only_a_valid_traceparent(
    traceparent: str | None, trace_id: str | None
) -> None:
    assert tracing.trace_id_of(traceparent) == trace_id


def test_configure_without_otel_variables_leaves_tracing_off() -> None:
    try:
        assert tracing.configure({}) is False
        assert not tracing.ACTIVE
    finally:
        tracing.deactivate()


def test_configure_with_sdk_disabled_leaves_tracing_off() -> None:
    try:
        environ = {"OTEL_SDK_DISABLED": "true", "OTEL_TRACES_EXPORTER": "console"}
        assert tracing.configure(environ) is False
    finally:
        tracing.deactivate()


def test_trace_url_fills_the_template(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("STREAMDESK_TRACE_URL", "https://jaeger.example/trace/{trace_id}")
    assert trace_url(TRACE_ID) == f"https://jaeger.example/trace/{TRACE_ID}"
    assert trace_url(None) is None


def test_trace_url_without_a_template_is_none(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("STREAMDESK_TRACE_URL", raising=False)
    assert trace_url(TRACE_ID) is None


@pytest.mark.parametrize(
    ("environ", "kinds"),
    [
        ({}, []),
        ({"OTEL_TRACES_EXPORTER": "none"}, []),
        ({"OTEL_TRACES_EXPORTER": "console"}, ["ConsoleSpanExporter"]),
        ({"OTEL_TRACES_EXPORTER": " Console , none "}, ["ConsoleSpanExporter"]),
    ],
)
def test_exporters_named_by_the_standard_variable(
    environ: dict[str, str], kinds: list[str]
) -> None:
    assert [type(e).__name__ for e in tracing._exporters(environ)] == kinds


@pytest.mark.parametrize(
    ("environ", "said"),
    [
        ({"OTEL_TRACES_EXPORTER": "zipkin"}, "zipkin unknown"),
        ({"OTEL_TRACES_EXPORTER": "console,jaeger"}, "jaeger unknown"),
        (
            {"OTEL_TRACES_EXPORTER": "otlp", "OTEL_EXPORTER_OTLP_PROTOCOL": "http/json"},
            "OTLP protocol 'http/json'",
        ),
        (
            {
                "OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4317",
                "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": "grpc",
            },
            "over grpc needs `pip install opentelemetry-exporter-otlp`",
        ),
    ],
)
def test_exporters_a_name_or_protocol_it_cannot_serve_is_said(
    environ: dict[str, str], said: str
) -> None:
    with pytest.raises(ConfigurationError, match=re.escape(said)):
        tracing._exporters(environ)


def test_configure_with_a_bad_exporter_logs_once_and_leaves_tracing_off(
    caplog: pytest.LogCaptureFixture,
) -> None:
    tracing.deactivate()
    try:
        with caplog.at_level(logging.ERROR, logger="streamdesk.tracing"):
            assert tracing.configure({"OTEL_TRACES_EXPORTER": "zipkin"}) is False
        assert tracing.ACTIVE is False
        assert [r.getMessage() for r in caplog.records] == [
            "tracing is off: OTEL_TRACES_EXPORTER: zipkin unknown; streamdesk knows otlp, "
            "console and none"
        ]
    finally:
        tracing.deactivate()
