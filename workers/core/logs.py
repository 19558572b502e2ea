"""Structured logs: one JSON object per line (``STREAMDESK_LOG_FORMAT=json``, or its alias
``LOG_FORMAT``) or key=value text.

A line logged while an agent handles an event (its own ``logging`` calls included, in its
task or its threads) carries that event's hash, entry id, type, consumer, the run's id and the
attempt's number and fencing token and, with tracing on, trace id: the formatters read them
from ``HANDLING``, the context variable the engine sets once per attempt
(``AgentContext.enter``), so nothing is added per line when idle.

Both formatters pass the finished line through ``redact_text``: a URL with a password that
reaches a log message, a field or a traceback is masked, whoever logged it. ``RepeatFilter``
turns a failure repeated per event into one line per failure class and minute.
"""

from __future__ import annotations

import json
import logging
import re
import threading
import time
import weakref
from collections.abc import Mapping
from contextvars import ContextVar
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Protocol

from workers.core import tracing
from workers.core.redact import redact_text

FORMATS = ("text", "json")


def log_format(environ: Mapping[str, str]) -> str:
    """``STREAMDESK_LOG_FORMAT``, else ``LOG_FORMAT`` (the name the issue and other tools
    use), else text; an unknown value is text rather than a logging setup that fails."""
    chosen = environ.get("STREAMDESK_LOG_FORMAT") or environ.get("LOG_FORMAT") or "text"
    return chosen.strip().lower() if chosen.strip().lower() in FORMATS else "text"


class Handling(Protocol):
    """The event an agent is handling (``AgentContext`` is one)."""

    event_hash: str
    entry_id: str
    event_type: str
    consumer: str
    # The entry's delivery count when this attempt started, and the attempt's fencing token.
    deliveries: int
    token: int


# Set by the engine around each attempt; copied into the agent's threads with its context.
HANDLING: ContextVar[Any] = ContextVar("streamdesk_handling", default=None)

# Attributes every LogRecord has; anything else came in through ``extra=``.
_STANDARD = set(vars(logging.LogRecord("", 0, "", 0, "", None, None))) | {"message", "asctime"}


def extras(record: logging.LogRecord) -> dict[str, Any]:
    """The line's own ``extra=`` fields, after the fields of the event being handled."""
    found = {k: v for k, v in vars(record).items() if k not in _STANDARD}
    event: Handling | None = HANDLING.get()
    if event is None:
        return found
    fields: dict[str, Any] = {
        "event_hash": event.event_hash,
        "entry_id": event.entry_id,
        "event_type": event.event_type,
        "consumer": event.consumer,
        **attempt_fields(event.event_hash, event.deliveries, event.token),
    }
    trace_id = tracing.current_trace_id()
    if trace_id is not None:
        fields["trace_id"] = trace_id
    return {**fields, **found}


def attempt_fields(event_hash: str, deliveries: int, token: int) -> dict[str, Any]:
    """Which run and which attempt a line is about. ``run_id`` is what the console finds a run
    by (``/events/<run_id>/``: one run per event, keyed by its hash); ``attempt`` is the entry's
    delivery count, as the timeline's attempt column; ``token`` the attempt's fencing token
    (``AgentRun.attempts``: how many times an agent started on the event)."""
    return {"run_id": event_hash, "attempt": deliveries, "token": token}


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        out: dict[str, Any] = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname.lower(),
            "logger": record.name,
            "msg": record.getMessage(),
            **extras(record),
        }
        if record.exc_info:
            out["exc"] = self.formatException(record.exc_info)
        return redact_text(json.dumps(out, default=str))


class TextFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        stamp = datetime.fromtimestamp(record.created).strftime("%H:%M:%S")
        fields = " ".join(f"{k}={v}" for k, v in extras(record).items())
        line = f"{stamp} {record.levelname.lower():7} {record.name}: {record.getMessage()}"
        line = f"{line} {fields}" if fields else line
        if record.exc_info:
            line = f"{line}\n{self.formatException(record.exc_info)}"
        return redact_text(line)


# -- repeated failures: one line per failure class and window, not one per event ------------

# The exception line of a traceback, "module.Class: message": its class names the failure.
# The class's own name is capitalized, which keeps "streamdesk:events" from looking like one.
_FAILURE_CLASS = re.compile(r"^\s*((?:[A-Za-z_]\w*\.)*[A-Z]\w*)(?:: |:?$)")
REPEAT_WINDOW_S = 60.0
# Windows kept for lines seen once: past this many, the ones that ended are let go.
MAX_WINDOWS = 512
# Every RepeatFilter alive, for flush_repeats; a filter no handler holds any more goes.
_FILTERS: weakref.WeakSet[RepeatFilter] = weakref.WeakSet()


def failure_class(record: logging.LogRecord) -> str:
    """What makes two failure lines "the same": the exception classes among the arguments
    (``KeyError``, not the key), else the ``reason`` the line carries, else the message."""
    args = record.args if isinstance(record.args, tuple) else ()
    classes = [m[1] for a in args if isinstance(a, str) and (m := _FAILURE_CLASS.match(a))]
    if classes:
        return ", ".join(classes)
    reason = getattr(record, "reason", None)
    return str(reason) if reason else record.getMessage()


def _first_line(record: logging.LogRecord) -> str:
    try:
        return record.getMessage().split("\n", 1)[0][:300]
    except Exception:  # a message whose arguments do not fit it: the template itself
        return str(record.msg)


def _head(template: str) -> str:
    """``"agent failed (%s); retry in %d ms"`` -> ``"agent failed"``."""
    return template.split("%", 1)[0].rstrip(" (:;,") or template


@dataclass(slots=True)
class _Window:
    started_s: float
    # The first line of the window as it was printed: the summary's head when the template
    # has no words before its first placeholder (django.request's "%s: %s").
    first: str = ""
    repeats: int = 0
    timer: threading.Timer | None = None


def flush_repeats() -> None:
    """Report every count every ``RepeatFilter`` of this process holds now: the filters are
    built by ``logging.config`` from ``LOGGING``, so a stopping worker finds them here."""
    for repeats in list(_FILTERS):
        repeats.flush()


class RepeatFilter(logging.Filter):
    """Rate-limits repeated failure lines instead of dropping them.

    The first warning (or worse) of a failure class is logged in full; the same class again
    within ``window_s`` is counted, and when the window ends one line says how many there
    were: ``agent failed: workers.examples.demo.agents.DemoFailure (x57 more in the last
    60 s)``. Under demo traffic every event's failure was a line, and the first one the reader
    needed scrolled away; an error that happens once still shows at once, whole. A worker
    reports the windows still open when it stops (``flush_repeats``), while its log's stream is
    still open: a worker stopped inside the minute does not lose the count.
    """

    def __init__(self, window_s: float = REPEAT_WINDOW_S, min_level: int = logging.WARNING):
        super().__init__()
        self.window_s = float(window_s)
        self.min_level = min_level
        self._windows: dict[tuple[str, int, str, str], _Window] = {}
        self._lock = threading.Lock()
        _FILTERS.add(self)

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno < self.min_level or getattr(record, "repeats", None) is not None:
            return True  # below the failures, or a summary this filter wrote
        key = (record.name, record.levelno, str(record.msg), failure_class(record))
        now_s = time.monotonic()
        with self._lock:
            window = self._windows.get(key)
            if window is None or now_s - window.started_s >= self.window_s:
                if len(self._windows) >= MAX_WINDOWS:
                    self._forget_ended(now_s)
                self._windows[key] = _Window(now_s, _first_line(record))
                return True
            window.repeats += 1
            if window.timer is None:
                delay_s = window.started_s + self.window_s - now_s
                window.timer = threading.Timer(delay_s, self._flush_key, (key,))
                window.timer.daemon = True
                window.timer.start()
        return False

    def _forget_ended(self, now_s: float) -> None:
        """Drop windows that ended with nothing to report (lines seen once), under the lock."""
        ended = [
            k
            for k, w in self._windows.items()
            if w.timer is None and now_s - w.started_s >= self.window_s
        ]
        for k in ended:
            del self._windows[k]

    def _flush_key(self, key: tuple[str, int, str, str]) -> None:
        with self._lock:
            window = self._windows.pop(key, None)
        if window is not None and window.repeats:
            self._summary(key, window)

    def flush(self) -> None:
        """Log every count held now, without waiting for the windows to end."""
        with self._lock:
            windows, self._windows = self._windows, {}
        for key, window in windows.items():
            if window.timer is not None:
                window.timer.cancel()
            if window.repeats:
                self._summary(key, window)

    def _summary(self, key: tuple[str, int, str, str], window: _Window) -> None:
        name, level, template, failure = key
        span_s = min(time.monotonic() - window.started_s, self.window_s)
        head = _head(template)
        if "%" in head:  # nothing but placeholders (django.request's): the first line's words
            head, failure = (
                window.first.rsplit(": ", 1) if ": " in window.first else (window.first, "the same")
            )
        logging.getLogger(name).log(
            level,
            "%s: %s (x%d more in the last %.0f s)",
            head,
            failure,
            window.repeats,
            span_s,
            extra={"repeats": window.repeats},
        )
