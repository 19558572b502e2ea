"""Management commands: ownership, help, status output."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from io import StringIO
from pathlib import Path
from typing import Any

import pytest
import redis
from django.core.management import call_command, get_commands

from workers.core.registry import default_registry
from workers.core.steps import Kind, StepRecord
from workers.models import AgentRun, GraphCheckpoint, GraphWrite, StepResult, TimelineStep
from workers.redis.embedded import EmbeddedValkey
from workers.store.timeline_rows import insert

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
        "cancel",
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
    from tests.support.engine import xadd

    r.xgroup_create("streamdesk:events", "agents", id="0", mkstream=True)
    ids = [xadd(r, {"type": "demo.echo", "data": {"n": i}}) for i in range(3)]
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
            "first_id": ids[0],
            "retention": None,  # no worker has trimmed it yet
            "groups": [
                # The home group's agents have no name (""); no worker counted here yet.
                {"name": "agents", "agent": "", "counters": {}, "consumers": 1, "pending": 1}
                | {"lag": 2}
            ],
        }
    ]
    assert (data["processed"], data["failed"], data["dead_lettered"], data["idempotency_hits"]) == (
        4,
        0,
        0,
        2,
    )


def test_streams_text_shows_unknown_lag(r: redis.Redis) -> None:
    from tests.support.engine import xadd

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
    assert out.getvalue().strip() == (
        "deleted 1 timeline steps older than 30 days and 0 stored steps and checkpoints of "
        "events that succeeded before then"
    )
    assert not TimelineStep.objects.exists()


@pytest.mark.django_db
def test_prune_timeline_drops_the_stored_progress_of_old_successes_only() -> None:
    old, new = datetime.now(UTC) - timedelta(days=40), datetime.now(UTC)
    for h, status in (("a" * 64, "succeeded"), ("b" * 64, "failed"), ("c" * 64, "succeeded")):
        AgentRun.objects.create(
            event_hash=h, event_type="t", stream="s", entry_id="1", status=status
        )
        StepResult.objects.create(event_hash=h, name="s1", value=1, created_at=old)
        GraphCheckpoint.objects.create(
            thread_id=h,
            checkpoint_id="1",
            checkpoint_type="t",
            checkpoint=b"",
            metadata_type="t",
            metadata=b"",
        )
        GraphWrite.objects.create(
            thread_id=h,
            checkpoint_id="1",
            task_id="t",
            idx=0,
            channel="c",
            value_type="t",
            value=b"",
        )
    StepResult.objects.filter(event_hash="c" * 64).update(created_at=new)
    GraphCheckpoint.objects.update(created_at=old)
    GraphCheckpoint.objects.filter(thread_id="c" * 64).update(created_at=new)
    call_command("prune_timeline", "--older-than-days", "30", stdout=StringIO())
    # The old success lost its steps and checkpoints; the failed run (it may come back) and
    # the recent success kept theirs.
    assert sorted(StepResult.objects.values_list("event_hash", flat=True)) == ["b" * 64, "c" * 64]
    kept = sorted(GraphCheckpoint.objects.values_list("thread_id", flat=True))
    assert kept == ["b" * 64, "c" * 64]
    assert sorted(GraphWrite.objects.values_list("thread_id", flat=True)) == ["b" * 64, "c" * 64]


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


def test_command_error_hides_the_redis_password() -> None:
    env = dict(os.environ, REDIS_URL="redis://default:s3cret-pw@127.0.0.1:1/0")
    result = subprocess.run(
        [sys.executable, "manage.py", "streams"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 1
    assert "cannot reach Redis at redis://default:***@127.0.0.1:1/0" in result.stderr
    assert "s3cret-pw" not in result.stdout + result.stderr


def test_up_banner_lines_up_the_childrens_pids() -> None:
    from workers.engine.supervisor import Child
    from workers.management.commands.up import Command as Up

    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        children = [Child(n, [], proc=sleeper) for n in ("workers", "console", "demo producer")]
        out = StringIO()
        Up(stdout=out)._banner(
            "redis://127.0.0.1:6379/0", True, children, {"no_console": True}, None
        )
    finally:
        sleeper.kill()
        sleeper.wait()
    rows = [line for line in out.getvalue().splitlines() if line.endswith(f"pid {sleeper.pid}")]
    assert [row.split()[0] for row in rows] == ["workers", "console", "demo"]
    assert len({row.index("pid ") for row in rows}) == 1  # one column
    [database] = [line for line in out.getvalue().splitlines() if line.startswith("  database")]
    assert database.index(database.split()[1]) == rows[0].index("pid ")  # and the others' values


def test_up_banner_gives_a_ready_to_paste_client_line_for_the_embedded_server(
    settings: Any,
) -> None:
    from workers.management.commands.up import Command as Up
    from workers.redis.embedded import valkey_binary

    settings.REDIS_URL = ""
    for url, tail in (
        ("redis://127.0.0.1:40123/0", "-u redis://127.0.0.1:40123/0"),
        ("unix:///tmp/x/valkey.sock", "-s /tmp/x/valkey.sock"),
    ):
        out = StringIO()
        Up(stdout=out)._banner(url, True, [], {"no_console": True}, None)
        [line] = [x for x in out.getvalue().splitlines() if x.startswith("  redis-cli:")]
        cli = line.split()[1]
        assert cli == str(valkey_binary().with_name("valkey-cli")) and line.endswith(tail)
        assert subprocess.run([cli, "--version"], capture_output=True).returncode == 0
