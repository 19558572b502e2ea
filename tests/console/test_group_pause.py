"""The group page's pause: one toggle, and who paused it when, in words."""

from __future__ import annotations

import re

import pytest
import redis
from django.test import Client

from tests.support.console import ACT, GROUP, HTMX, pending_entries
from tests.support.engine import STREAM
from workers.core.keys import Keys

pytestmark = pytest.mark.django_db(transaction=True)


def test_running_group_shows_pause_only(r: redis.Redis, operator_client: Client) -> None:
    pending_entries(r)
    body = operator_client.get(GROUP).content.decode()
    assert "Pause group" in body and "Resume group" not in body


def test_paused_group_shows_resume_only_and_when(r: redis.Redis, operator_client: Client) -> None:
    pending_entries(r)
    operator_client.post(f"{ACT}pause/", {}, headers=HTMX)

    body = operator_client.get(GROUP).content.decode()
    assert "Resume group" in body and "Pause group" not in body
    found = re.search(
        r"<strong>Paused</strong> by ops at <time datetime=\"([^\"]+)\"[^>]*>([^<]+)<", body
    )
    assert found, body
    assert re.fullmatch(r"\d\d:\d\d:\d\d UTC \((just now|\d+ s ago)\)", found[2])
    assert f"by ops at {found[1]}" not in body  # the ISO time only in the attributes

    operator_client.post(f"{ACT}resume/", {}, headers=HTMX)
    body = operator_client.get(GROUP).content.decode()
    assert "Pause group" in body and "Resume group" not in body


def test_pause_written_by_hand_is_shown_as_it_is(r: redis.Redis, operator_client: Client) -> None:
    pending_entries(r)
    r.set(Keys().paused(STREAM, "agents"), "maintenance window")
    body = operator_client.get(GROUP).content.decode()
    assert "<strong>Paused</strong> by maintenance window:" in body
    assert "Resume group" in body


def test_viewer_sees_no_toggle(r: redis.Redis, viewer_client: Client) -> None:
    pending_entries(r)
    r.set(Keys().paused(STREAM, "agents"), "ops at 2026-12-03T11:23:04.962794+00:00")
    body = viewer_client.get(GROUP).content.decode()
    assert "<strong>Paused</strong> by ops at <time" in body
    assert "Resume group" not in body and "Pause group" not in body
