"""Management commands: ownership, help, status output."""

from __future__ import annotations

import json
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from io import StringIO
from pathlib import Path

import pytest
import redis
from django.core.management import call_command, get_commands

from workers.embedded import EmbeddedValkey
from workers.models import TimelineStep
from workers.registry import default_registry
from workers.steps import Kind, StepRecord
from workers.timeline import insert

ROOT = Path(__file__).resolve().parents[2]


def test_our_runworker_wins_over_channels() -> None:
    assert get_commands()["runworker"] == "workers"


@pytest.mark.parametrize(
    "command",
    [
        "runworker",
        "publish",
        "streams",
        "valkey",
        "demoproducer",
        "up",
        "prune_timeline",
        "claim",
        "retry",
        "deadletter",
        "redrive",
        "purge",
        "pause",
        "resume",
        "rerun",
        "jobs",
        "apitoken",
    ],
)
def test_every_command_has_help(command: str) -> None:
    result = subprocess.run(
        [sys.executable, "manage.py", command, "--help"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert "usage:" in result.stdout


def test_streams_json_is_one_object_in_the_documented_shape(r: redis.Redis) -> None:
    from tests.integration.helpers import xadd

    r.xgroup_create("streamdesk:events", "agents", id="0", mkstream=True)
    for i in range(3):
        xadd(r, {"type": "demo.echo", "data": {"n": i}})
    r.xreadgroup("agents", "c1", {"streamdesk:events": ">"}, count=1)
    r.xadd("streamdesk:events:dead", {"event": "{}", "reason": "x"})
    r.hset("streamdesk:stats:streamdesk:events", mapping={"processed": 4, "idempotency_hits": 2})
    r.sadd("streamdesk:stats:streams", "streamdesk:events")

    out = StringIO()
    call_command("streams", "--json", stdout=out)
    data = json.loads(out.getvalue())
    assert data["streams"] == [
        {
            "name": "streamdesk:events",
            "length": 3,
            "dead_letters": 1,
            "groups": [{"name": "agents", "consumers": 1, "pending": 1, "lag": 2}],
        }
    ]
    assert (data["processed"], data["failed"], data["dead_lettered"], data["idempotency_hits"]) == (
        4,
        0,
        0,
        2,
    )


def test_streams_text_shows_unknown_lag(r: redis.Redis) -> None:
    from tests.integration.helpers import xadd

    r.xgroup_create("streamdesk:events", "agents", id="0", mkstream=True)
    ids = [xadd(r, {"type": "demo.echo", "data": {}}) for _ in range(3)]
    r.xdel("streamdesk:events", ids[1])  # a tombstone inside the unread range
    out = StringIO()
    call_command("streams", stdout=out)
    text = out.getvalue()
    assert "length 2" in text
    if int(r.info("server")["redis_version"].split(".")[0]) >= 7:
        assert "lag unknown" in text


@pytest.mark.django_db
def test_prune_timeline_reports_what_it_deleted() -> None:
    old = datetime.now(UTC) - timedelta(days=40)
    insert([StepRecord("h", "streamdesk:events", "1-0", old, Kind.RAN, "w", 1)])
    out = StringIO()
    call_command("prune_timeline", "--older-than-days", "30", stdout=out)
    assert out.getvalue().strip() == "deleted 1 timeline steps older than 30 days"
    assert not TimelineStep.objects.exists()


def test_embedded_server_starts_answers_and_stops(tmp_path: Path) -> None:
    server = EmbeddedValkey(tmp_path / "data")
    assert not server.status().running
    try:
        assert server.ensure_running() is True
        assert server.ensure_running() is False  # found, not started twice
        client = redis.Redis.from_url(server.url, decode_responses=True)
        assert client.config_get("appendonly")["appendonly"] == "yes"
        assert client.config_get("appendfsync")["appendfsync"] == "everysec"
        client.close()
        assert server.url.startswith("unix://") or "127.0.0.1" in server.url
    finally:
        assert server.stop() is True
    assert not server.status().running


def test_demo_agents_cover_the_documented_types() -> None:
    assert {"demo.echo", "demo.sleep", "demo.fail"} <= {s.type for s in default_registry}
