"""``manage.py replay``: a thin door onto workers/replay, with clear errors."""

from __future__ import annotations

import json
import re
from io import StringIO
from typing import Any

import pytest
import redis
from django.core.management import CommandError, call_command

from tests.support.engine import STREAM, run_fleet
from tests.support.replay import copies, publish
from workers.core.config import EngineConfig
from workers.core.registry import default_registry
from workers.models import AgentRun, BulkJob

pytestmark = pytest.mark.django_db(transaction=True)

ECHO = "demo.echo"  # the demo's agent (tests run with STREAMDESK_DEMO=1)


def run(*args: str) -> tuple[str, str]:
    out, err = StringIO(), StringIO()
    call_command("replay", *args, stdout=out, stderr=err)
    return out.getvalue(), err.getvalue()


def refused(*args: str) -> str:
    with pytest.raises(CommandError) as caught:
        run(*args)
    return str(caught.value)


def test_replay_command_returns_once_every_copy_is_in_the_stream(
    r: redis.Redis, redis_url: str, config: EngineConfig
) -> None:
    ids = publish(r, 1_200, type_=ECHO)
    run_fleet(redis_url, config, default_registry, agents=[ECHO])
    out, err = run("--agent", ECHO, "--force", "--json")
    outcome: dict[str, Any] = json.loads(out)
    assert (outcome["outcome"], outcome["count"], outcome["action"]) == ("ok", 1200, "replay")
    assert "1200 done" in err  # progress on stderr
    assert [f["replayed_from"] for f in copies(r)] == ids
    run_fleet(redis_url, config, default_registry, agents=[ECHO])
    assert AgentRun.objects.exclude(replay_of="").count() == 1200


def test_replay_dry_run_prints_the_preview(r: redis.Redis) -> None:
    publish(r, 7, type_=ECHO)
    out, _ = run("--agent", ECHO, "--dry-run")
    assert "replay on streamdesk:events group agents: dry-run, would act on 7" in out
    assert "7 entries in range, 7 of the agent's events, 0 already done" in out
    assert "the stream reaches back to" in out
    assert copies(r) == [] and BulkJob.objects.count() == 0


def test_replay_without_force_of_done_events_exits_1(
    r: redis.Redis, redis_url: str, config: EngineConfig
) -> None:
    publish(r, 3, type_=ECHO)
    run_fleet(redis_url, config, default_registry, agents=[ECHO])
    with pytest.raises(CommandError) as caught:
        run("--agent", ECHO)
    assert caught.value.returncode == 1 and "nothing to replay" in str(caught.value)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--agent", "nobody"), r"agent: no agent is named 'nobody' \(the agents: .*demo\.echo"),
        (("--agent", ECHO, "--from", "last tuesday"), "from: 'last tuesday' is neither"),
        (("--agent", ECHO, "--to", "12-x"), "to: '12-x' is neither"),
        (("--agent", ECHO, "--from", "2026-12-02", "--to", "2026-12-01"), "starts .* after"),
        (("--agent", ECHO, "--type", "demo.fail"), "runs 'demo.echo' events, not 'demo.fail'"),
        (("--agent", ECHO, "--from", "2001-01-01", "--to", "2001-01-02"), "nothing in range"),
    ],
)
def test_replay_command_says_what_is_wrong(
    r: redis.Redis, args: tuple[str, ...], message: str
) -> None:
    publish(r, 2, type_=ECHO, stream=STREAM)
    assert re.search(message, refused(*args))
