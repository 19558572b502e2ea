"""Fixtures shared by the integration tests' modules (the suite's own are in tests/conftest.py)."""

from __future__ import annotations

import io
import logging
from collections.abc import Iterator
from typing import TYPE_CHECKING

import pytest

from workers.core import tracing
from workers.core.logs import JsonFormatter

if TYPE_CHECKING:  # OpenTelemetry is an extra: imported by the fixture that needs it
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter


@pytest.fixture
def lines() -> Iterator[io.StringIO]:
    """Everything the root logger writes during the test, through the JSON formatter."""
    out = io.StringIO()
    handler = logging.StreamHandler(out)
    handler.setFormatter(JsonFormatter())
    root = logging.getLogger()
    previous = root.level
    root.addHandler(handler)
    root.setLevel(logging.INFO)
    yield out
    root.removeHandler(handler)
    root.setLevel(previous)


@pytest.fixture
def spans() -> Iterator[InMemorySpanExporter]:
    """Tracing on with a provider of its own: the global one stays unset for other tests."""
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracing.activate(provider)
    yield exporter
    tracing.deactivate()
    provider.shutdown()
