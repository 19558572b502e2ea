"""Structured logs: one JSON object per line (``STREAMDESK_LOG_FORMAT=json``) or key=value text.

Both formatters pass the finished line through ``redact_text``: a URL with a password that
reaches a log message, a field or a traceback is masked, whoever logged it.
"""

from __future__ import annotations

import json
import logging
from datetime import UTC, datetime
from typing import Any

from workers.redact import redact_text

# Attributes every LogRecord has; anything else came in through ``extra=``.
_STANDARD = set(vars(logging.LogRecord("", 0, "", 0, "", None, None))) | {"message", "asctime"}


def extras(record: logging.LogRecord) -> dict[str, Any]:
    return {k: v for k, v in vars(record).items() if k not in _STANDARD}


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
