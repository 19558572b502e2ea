"""``manage.py errors``: lists the error groups, retries or purges one as a job run in the
foreground, backfills old letters; honest exit codes."""

from __future__ import annotations

import json
from io import StringIO

import pytest
import redis
from django.core.management import CommandError, call_command

from tests.support.entries import dead_letters
from tests.support.error_letters import STREAM, card_declined, letter, order_missing, write_letters
from workers.core.keys import Keys, dead_stream
from workers.models import AuditRecord
from workers.redis.error_groups import read_groups

pytestmark = pytest.mark.django_db
KEYS = Keys()


def run(*args: str) -> tuple[str, str]:
    out, err = StringIO(), StringIO()
    call_command("errors", *args, stdout=out, stderr=err)
    return out.getvalue(), err.getvalue()


def grouped(r: redis.Redis, redis_url: str) -> dict[str, str]:
    r.sadd(KEYS.streams_index, STREAM)
    letters = [letter(i, order_missing(f"ord-{i}", padding=i)) for i in range(3)]
    letters += [letter(10, card_declined(4242), kind="shop.pay")]
    write_letters(redis_url, letters)
    return {g.kind: g.fingerprint for g in read_groups(r, KEYS, [STREAM])}


def test_errors_lists_groups_largest_first(r: redis.Redis, redis_url: str) -> None:
    fps = grouped(r, redis_url)
    out, _ = run()
    lines = out.splitlines()
    assert lines[0].startswith(fps["KeyError"]) and "[shop.order]" in lines[0]
    assert lines[1].startswith(fps["ValueError"]) and "card <num> declined" in lines[1]
    assert lines[-1] == "2 groups, 4 letters"


def test_errors_json_is_one_object_per_group(r: redis.Redis, redis_url: str) -> None:
    grouped(r, redis_url)
    rows = [json.loads(line) for line in run("--json")[0].splitlines()]
    assert [(row["kind"], row["count"]) for row in rows] == [("KeyError", 3), ("ValueError", 1)]


def test_errors_retry_runs_the_groups_job(r: redis.Redis, redis_url: str) -> None:
    fps = grouped(r, redis_url)
    out, err = run("--retry", fps["KeyError"])
    assert "redrive on streamdesk:events: ok, 3 done" in out and "job #" in err
    assert r.xlen(STREAM) == 3 and r.xlen(dead_stream(STREAM)) == 1
    assert AuditRecord.objects.get().door == "cli"


def test_errors_purge_needs_a_reason(r: redis.Redis, redis_url: str) -> None:
    fps = grouped(r, redis_url)
    with pytest.raises(CommandError, match="reason"):
        run("--purge", fps["ValueError"])
    run("--purge", fps["ValueError"], "--reason", "test cards")
    assert r.xlen(dead_stream(STREAM)) == 3


def test_errors_unknown_group_exits_1(r: redis.Redis) -> None:
    with pytest.raises(CommandError) as caught:
        run("--retry", "0123456789abcdef")
    assert caught.value.returncode == 1 and "no dead letters" in str(caught.value)


def test_errors_malformed_fingerprint_exits_2(r: redis.Redis) -> None:
    with pytest.raises(CommandError) as caught:
        run("--retry", "nope")
    assert caught.value.returncode == 2


def test_errors_backfill_groups_old_letters(r: redis.Redis) -> None:
    r.sadd(KEYS.streams_index, STREAM)
    dead_letters(r, 700)
    assert "700 letters without a fingerprint: --backfill" in run()[0]
    assert run("--backfill")[0] == f"{STREAM}: 700 letters joined their groups\n"
    assert run()[0].splitlines()[-1] == "1 group, 700 letters"
