"""The pure parts of tracing: reading a traceparent, switching on only when asked."""

from __future__ import annotations

import pytest

from console.views.events import trace_url
from workers.core import tracing

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
