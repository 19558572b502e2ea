"""Fixtures shared by the integration tests' modules (the suite's own are in tests/conftest.py)."""

from __future__ import annotations

import io
import logging
from collections.abc import Iterator

import pytest

from workers.core.logs import JsonFormatter


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
