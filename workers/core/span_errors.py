"""Failures recorded on spans as redacted as a log line: a span leaves the process (an OTLP
collector, a vendor's backend), so an exception that echoes a configured secret (an LLM
endpoint's 401 with the key) must not ride along in its message or traceback."""

from __future__ import annotations

import contextlib
import traceback
from collections.abc import Iterator
from typing import Any

from workers.core.redact import redact_text
from workers.core.storable import encodable


def shown(text: str) -> str:
    return redact_text(encodable(text))


def record_exception(span: Any, exc: BaseException) -> None:
    """``span.record_exception(exc)``, its message and traceback redacted."""
    span.record_exception(
        exc,
        attributes={
            "exception.message": shown(str(exc)),
            "exception.stacktrace": shown("".join(traceback.format_exception(exc))),
        },
    )


def record_failure(span: Any, exc: BaseException) -> None:
    """The exception, and the span's status set to an error that says it (redacted)."""
    from opentelemetry import trace

    record_exception(span, exc)
    span.set_status(trace.StatusCode.ERROR, shown(f"{type(exc).__name__}: {exc}"))


@contextlib.contextmanager
def started(tracer: Any, name: str, *args: Any, **kwargs: Any) -> Iterator[Any]:
    """``tracer.start_as_current_span(...)``, the exception it ends with recorded redacted:
    the SDK's own recording would write ``str(exc)`` as it is."""
    manual = {"record_exception": False, "set_status_on_exception": False}
    with tracer.start_as_current_span(name, *args, **kwargs, **manual) as one:
        try:
            yield one
        except Exception as exc:  # as the SDK: GeneratorExit, a cancellation are no errors
            record_failure(one, exc)
            raise
