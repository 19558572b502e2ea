"""A dry run changes nothing and says what would happen, for every action that takes one;
a field an action does not take is a 400, never silently ignored."""

from __future__ import annotations

import json
from io import StringIO
from typing import Any

import pytest
import redis
from django.core.management import call_command
from django.test import Client

from tests.support.console import API_GROUP, pending_entries
from tests.support.engine import STREAM
from workers.core.keys import Keys
from workers.models import AuditRecord

pytestmark = pytest.mark.django_db(transaction=True)

PAUSED = Keys().paused(STREAM, "agents")


def post(client: Client, action: str, body: dict[str, Any]) -> Any:
    return client.post(f"{API_GROUP}{action}/", body, content_type="application/json")


def test_api_pause_dry_run_changes_nothing(r: redis.Redis, operator_client: Client) -> None:
    pending_entries(r)
    response = post(operator_client, "pause", {"dry_run": True})
    assert response.status_code == 200, response.content
    outcome = response.json()
    assert outcome["outcome"] == "dry-run" and outcome["count"] == 1
    assert outcome["detail"] == "dry run: nothing changed; would pause"
    assert not r.exists(PAUSED)
    assert AuditRecord.objects.get().outcome == "dry-run"


def test_api_pause_dry_run_on_a_paused_group_says_who(
    r: redis.Redis, operator_client: Client
) -> None:
    pending_entries(r)
    post(operator_client, "pause", {})
    outcome = post(operator_client, "pause", {"dry_run": True}).json()
    assert outcome["count"] == 0 and "already paused by ops" in outcome["detail"]


def test_api_resume_dry_run_keeps_the_pause(r: redis.Redis, operator_client: Client) -> None:
    pending_entries(r)
    post(operator_client, "pause", {})
    outcome = post(operator_client, "resume", {"dry_run": True}).json()
    assert outcome["outcome"] == "dry-run" and outcome["count"] == 1
    assert "would resume" in outcome["detail"] and r.exists(PAUSED)


def test_api_unknown_field_is_400_and_acts_not(r: redis.Redis, operator_client: Client) -> None:
    pending_entries(r)
    r.xgroup_createconsumer(STREAM, "agents", "idle")
    response = post(operator_client, "remove-consumer", {"consumer": "idle", "dry_run": True})
    assert response.status_code == 400
    assert response.json()["error"] == "dry_run: not accepted here"
    assert "idle" in {c["name"] for c in r.xinfo_consumers(STREAM, "agents")}
    assert not AuditRecord.objects.exists()


def test_api_rerun_unknown_field_is_400(r: redis.Redis, operator_client: Client) -> None:
    response = operator_client.post(
        f"/api/events/{'0' * 64}/rerun/",
        {"reason": "again", "dry_run": True},
        content_type="application/json",
    )
    assert response.status_code == 400 and response.json()["error"].startswith("dry_run:")


def test_cli_pause_dry_run_changes_nothing(r: redis.Redis) -> None:
    pending_entries(r)
    out = StringIO()
    call_command(
        "pause", "--stream", STREAM, "--group", "agents", "--dry-run", "--json", stdout=out
    )
    assert json.loads(out.getvalue())["outcome"] == "dry-run"
    assert not r.exists(PAUSED)
