"""``manage.py waits`` and ``manage.py answer``: thin doors onto the waits' view and the
answer operation; a bad input or a refusal is one line and a non-zero exit."""

from __future__ import annotations

import json
import subprocess
import sys
from io import StringIO
from pathlib import Path

import pytest
import redis
from django.core.management import CommandError, call_command

from tests.support.waits import ANSWER_TYPE, run_hash, sleep, wait_for
from workers.core.keys import DEFAULT_STREAM
from workers.models import AuditRecord

pytestmark = pytest.mark.django_db
ROOT = Path(__file__).resolve().parents[2]


def run(*args: str) -> str:
    out = StringIO()
    call_command(*args, stdout=out, stderr=StringIO())
    return out.getvalue()


def test_waits_lists_newest_first(r: redis.Redis, redis_url: str) -> None:
    wait_for(redis_url, run_hash(1), {"data.order_id": 1})
    sleep(redis_url, run_hash(2))
    lines = run("waits").splitlines()
    assert lines[0] == f"2 runs waiting on {DEFAULT_STREAM}"
    assert lines[1].startswith(run_hash(2)) and "waits for sleep" in lines[1]
    assert lines[2].startswith(run_hash(1)) and "refund.answered where data.order_id=1" in lines[2]


def test_waits_json_and_limit(r: redis.Redis, redis_url: str) -> None:
    for n in range(3):
        wait_for(redis_url, run_hash(n), {"data.order_id": n})
    data = json.loads(run("waits", "--json", "--limit", "2"))
    assert data["total"] == 3 and len(data["waits"]) == 2
    first = data["waits"][0]
    assert (first["event_hash"], first["type"], first["match"]) == (
        run_hash(2),
        ANSWER_TYPE,
        {"data.order_id": 2},
    )


def test_waits_bad_limit_is_an_error(r: redis.Redis) -> None:
    with pytest.raises(CommandError, match="--limit: 0 is not between 1 and 500"):
        run("waits", "--limit", "0")


def test_answer_approve_publishes_and_audits_door_cli(r: redis.Redis, redis_url: str) -> None:
    wait_for(redis_url, run_hash(1), {"data.order_id": 1})
    out = run("answer", run_hash(1), "--approve", "--comment", "ok", "--by", "alice")
    assert out.startswith(f"answer on {DEFAULT_STREAM} group agents: ok, 1 done")
    [(_, fields)] = r.xrange(DEFAULT_STREAM)
    data = json.loads(fields["event"])["data"]
    assert data == {"order_id": 1, "approved": True, "by": "alice", "comment": "ok"}
    record = AuditRecord.objects.get()
    assert (record.action, record.door, record.outcome) == ("answer", "cli", "ok")
    assert record.actor.startswith("cli:") and record.target["by"] == "alice"


def test_answer_sleep_is_refused_exit_2(r: redis.Redis, redis_url: str) -> None:
    sleep(redis_url, run_hash(2))
    with pytest.raises(CommandError, match="cancel it instead") as refused:
        run("answer", run_hash(2), "--reject")
    assert refused.value.returncode == 2


def test_answer_bad_hash_is_refused_exit_2(r: redis.Redis) -> None:
    with pytest.raises(CommandError, match="is not an event hash") as refused:
        run("answer", "abc", "--approve")
    assert refused.value.returncode == 2


def test_answer_needs_exactly_one_decision() -> None:
    manage = [sys.executable, str(ROOT / "manage.py"), "answer", run_hash(1)]
    neither = subprocess.run(manage, capture_output=True, text=True, cwd=ROOT, timeout=60)
    both = subprocess.run(
        [*manage, "--approve", "--reject"], capture_output=True, text=True, cwd=ROOT, timeout=60
    )
    assert neither.returncode == 2 and "one of the arguments --approve --reject" in neither.stderr
    assert both.returncode == 2 and "not allowed with argument" in both.stderr
