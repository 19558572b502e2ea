"""The dead-letter preview: operators only, one at a time per user, and bounded."""

from __future__ import annotations

import json

import pytest
import redis
from django.test import Client

from tests.support.console import INDEX, dead_letter, text
from tests.support.engine import STREAM
from workers.core.keys import dead_stream
from workers.operations.preview import PREVIEW_MAX_SCANNED

pytestmark = pytest.mark.django_db(transaction=True)


def test_dead_preview_is_for_operators_only(r: redis.Redis, viewer_client: Client) -> None:
    dead_letter(r, event=json.dumps({"type": "demo.echo", "data": {}}))
    assert viewer_client.get(f"/streams/{STREAM}/dead/preview/").status_code == 403


def test_dead_preview_runs_one_at_a_time_per_user(
    r: redis.Redis, operator: object, operator_client: Client
) -> None:
    dead_letter(r, event=json.dumps({"type": "demo.echo", "data": {}}))
    slot = f"streamdesk:console:preview:{operator.pk}"  # type: ignore[attr-defined]
    r.set(slot, "a preview still running in another console process", px=60_000)
    busy = operator_client.get(f"/streams/{STREAM}/dead/preview/")
    assert busy.status_code == 429 and "still counting" in text(busy)
    r.delete(slot)
    done = operator_client.get(f"/streams/{STREAM}/dead/preview/")
    assert done.status_code == 200 and not r.exists(slot)  # the slot is given back


def test_dead_preview_over_its_bound_says_at_least(r: redis.Redis, operator_client: Client) -> None:
    r.sadd(INDEX, STREAM)
    with r.pipeline(transaction=False) as pipe:
        for _ in range(PREVIEW_MAX_SCANNED + 1):
            pipe.xadd(dead_stream(STREAM), {"event": "{}", "reason": "r", "deliveries": "1"})
        pipe.execute()
    body = text(operator_client.get(f"/streams/{STREAM}/dead/preview/"))
    assert f"At least {PREVIEW_MAX_SCANNED:,} dead letters match" in body
