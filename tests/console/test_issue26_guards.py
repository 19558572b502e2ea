"""Issue 26, item 8: the API's dead-letter preview has the console page's guards (operators
only, one at a time per user): one viewer token ran 15 concurrent scans and slowed sign-in
from 0.07 s to 1.5-8 s."""

from __future__ import annotations

import json
from typing import Any

import pytest
import redis

from tests.support.console import api_client, dead_letter, member_of
from tests.support.engine import STREAM

pytestmark = pytest.mark.django_db(transaction=True)

PREVIEW = f"/api/streams/{STREAM}/dead/preview/"


def test_api_dead_preview_is_for_operators_only(r: redis.Redis, operator: Any) -> None:
    dead_letter(r, event=json.dumps({"type": "demo.echo", "data": {}}))
    viewer, viewer_headers = api_client(member_of("watcher", "viewers"))
    assert viewer.get(PREVIEW, headers=viewer_headers).status_code == 403
    client, headers = api_client(operator)
    answer = client.get(PREVIEW, headers=headers)
    assert answer.status_code == 200 and answer.json()["matching"] == 1
    assert client.post(PREVIEW, headers=headers).status_code == 405


def test_api_dead_preview_runs_one_at_a_time_per_user(r: redis.Redis, operator: Any) -> None:
    dead_letter(r, event=json.dumps({"type": "demo.echo", "data": {}}))
    slot = f"streamdesk:console:preview:{operator.pk}"
    r.set(slot, "a preview still running in another console process", px=60_000)
    client, headers = api_client(operator)
    busy = client.get(PREVIEW, headers=headers)
    assert busy.status_code == 429 and busy["Retry-After"]
    assert "still counting" in busy.json()["error"]
    r.delete(slot)
    assert client.get(PREVIEW, headers=headers).status_code == 200
    assert not r.exists(slot)  # the slot is given back
