"""The Runs page benchmark's timed part, run as a subprocess against one database.

    python -m bench.console.runs_measure PLAN.json RESULT.json

``DATABASE_URL`` names a migrated, empty database of the bench's own (a SQLite file or a
uniquely named PostgreSQL database). This inserts ``plan["rows"]`` runs
(bench/console/runs_data.py), then times ``GET /runs/?...`` for every query in ``queries``,
round after round, with ``django.test.Client`` as a signed-in staff user: URL routing,
middleware, the session, the form, the keyset query and the template; server side only.
"""

from __future__ import annotations

import gc
import json
import os
import sqlite3
import sys
import time
from datetime import timedelta
from pathlib import Path
from typing import Any

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "console.settings")

import django

django.setup()

from django.contrib.auth import get_user_model  # noqa: E402
from django.db import connection  # noqa: E402
from django.test import Client  # noqa: E402

from bench.console import runs_data  # noqa: E402
from console.reads.runs import ERROR_SCAN_ROWS, PAGE_SIZE, Cursor  # noqa: E402
from workers.models import AgentRun  # noqa: E402

gc.collect()
gc.freeze()  # as console/asgi.py does once daphne has started

DEEP_PAGE = 50
# A row of the table, as templates/console/_runs.html writes it.
ROW_MARK = b"data-run="


def _page_cursor(**filters: str) -> str:
    """Where page ``DEEP_PAGE`` starts: the key of the last row of the page before it (found
    here once with OFFSET; the page itself is reached by its cursor, as a reader's would)."""
    runs = AgentRun.objects.filter(**filters).order_by("-created_at", "-id")
    at, pk = runs.values_list("created_at", "id")[(DEEP_PAGE - 1) * PAGE_SIZE - 1]
    return Cursor(at, pk).encode()


def queries(rows: int) -> dict[str, tuple[str, int | None]]:
    """Each timed query string, and how many rows its page must show (None: any number)."""
    day = runs_data.Inserted(rows, 0).moment(rows // 2).replace(hour=0, minute=0, second=0)
    when = f"created_from={day:%Y-%m-%dT%H:%M}&created_to={day + timedelta(days=1):%Y-%m-%dT%H:%M}"
    some_type, deep = "bench.type-7", _page_cursor()
    return {
        "newest": ("", PAGE_SIZE),
        "type": (f"type={some_type}", PAGE_SIZE),
        "status failed": ("status=failed", PAGE_SIZE),
        "status cancelled": ("status=cancelled", PAGE_SIZE),
        "subject": (f"subject=order/{runs_data.SUBJECTS // 2 + 42}", None),
        "one day": (when, PAGE_SIZE),
        "error common": ("error=declined", PAGE_SIZE),
        "error absent": ("error=no-such-text", 0),
        "type + status": (f"type={some_type}&status=dead", PAGE_SIZE),
        "type + status + day": (f"type={some_type}&status=failed&{when}", None),
        "type + error": (f"type={some_type}&error=timeout", PAGE_SIZE),
        "sparse + error": ("status=cancelled&error=no-such-text", 0),
        "type + status + error": (f"type={some_type}&status=failed&error=sku", PAGE_SIZE),
        "page 50": (f"older={deep}", PAGE_SIZE),
        "page 50, type": (
            f"type={some_type}&older={_page_cursor(event_type=some_type)}",
            PAGE_SIZE,
        ),
        "newer from page 50": (f"newer={deep}", PAGE_SIZE),
    }


def staff_client() -> Client:
    user, _ = get_user_model().objects.get_or_create(
        username="bench", defaults={"is_staff": True, "is_superuser": True}
    )
    client = Client(HTTP_HOST="127.0.0.1")
    client.force_login(user)
    return client


def get(client: Client, query: str, expected: int | None) -> float:
    began = time.perf_counter()
    response = client.get(f"/runs/?{query}")
    elapsed = (time.perf_counter() - began) * 1000
    if response.status_code != 200:
        raise RuntimeError(f"GET /runs/?{query}: {response.status_code}")
    shown = response.content.count(ROW_MARK)
    if expected is not None and shown != expected:  # else the figure is of another page
        raise RuntimeError(f"GET /runs/?{query} showed {shown} rows, not {expected}")
    return elapsed


def main(plan_path: str, out_path: str) -> int:
    plan: dict[str, Any] = json.loads(Path(plan_path).read_text())
    inserted = runs_data.insert(int(plan["rows"]))
    client = staff_client()
    asked = queries(inserted.rows)
    ms: dict[str, list[float]] = {name: [] for name in asked}
    for round_ in range(plan["warmup"] + plan["repeats"]):
        for name, (query, expected) in asked.items():
            elapsed = get(client, query, expected)
            if round_ >= plan["warmup"]:
                ms[name].append(elapsed)
    result = {
        "vendor": connection.vendor,
        "server": sqlite3.sqlite_version,
        "rows": inserted.rows,
        "insert_s": inserted.seconds,
        "error_scan_rows": ERROR_SCAN_ROWS,
        "queries": {name: query for name, (query, _) in asked.items()},
        "ms": ms,
    }
    Path(out_path).write_text(json.dumps(result))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(*sys.argv[1:3]))
