"""``manage.py trim`` and ``manage.py streams`` on retention: what goes, what held it back,
how far back the stream reaches, and clear refusals."""

from __future__ import annotations

import json
import time
from io import StringIO

import pytest
import redis
from django.core.management import CommandError, call_command

from workers.core.keys import Keys

S = "ret:cli"
DAY_MS = 86_400_000


def run(*args: str) -> str:
    out = StringIO()
    call_command(*args, stdout=out, stderr=StringIO())
    return out.getvalue()


def old_stream(r: redis.Redis, count: int, acked: int) -> list[str]:
    """``count`` entries ten days old (the default retention is a week), a group that read
    them all and acked the first ``acked``."""
    start = int(time.time() * 1000) - 10 * DAY_MS
    ids = [str(r.xadd(S, {"event": "{}"}, id=f"{start + i}-0")) for i in range(count)]
    r.xgroup_create(S, "agents", id="0")
    r.xreadgroup("agents", "c", {S: ">"})
    if acked:
        r.xack(S, "agents", *ids[:acked])
    return ids


def test_trim_dry_run_says_what_would_go_and_trims_nothing(r: redis.Redis) -> None:
    old_stream(r, 300, acked=300)
    out = run("trim", "--stream", S, "--dry-run")
    assert out.splitlines()[0] == "retention: keeps 7 d"
    assert f"{S}: would trim 299 entries (up to;" in out
    assert r.xlen(S) == 300


def test_trim_says_which_group_held_it_back(r: redis.Redis) -> None:
    ids = old_stream(r, 300, acked=150)
    out = run("trim", "--stream", S)
    assert f"held back by group agents (it still needs {ids[150]})" in out
    assert set(ids[150:]) <= {e for e, _ in r.xrange(S)}


def test_trim_json_gives_each_stream_s_outcome(r: redis.Redis) -> None:
    old_stream(r, 300, acked=300)
    got = json.loads(run("trim", "--stream", S, "--json"))
    assert got["retention"] == {"retention_s": 7 * 86_400, "max_len": 0}
    assert got["streams"][S]["status"] == "trimmed" and got["streams"][S]["trimmed"] >= 200


def test_trim_refuses_a_missing_stream_and_a_dead_letter_stream(r: redis.Redis) -> None:
    with pytest.raises(CommandError, match="no such stream: ret:nope"):
        run("trim", "--stream", "ret:nope")
    with pytest.raises(CommandError, match="not a stream workers consume"):
        run("trim", "--stream", f"{S}:dead")


def test_trim_refuses_a_key_that_is_not_a_stream(r: redis.Redis) -> None:
    r.set(S, "text")
    with pytest.raises(CommandError, match=f"cannot trim {S}: .*WRONGTYPE"):
        run("trim", "--stream", S)


def test_streams_shows_the_oldest_entry_and_the_last_trim(r: redis.Redis) -> None:
    old_stream(r, 300, acked=300)
    r.sadd(Keys().streams_index, S)
    assert "retention: not trimmed yet" in run("streams")
    run("trim", "--stream", S)
    out = run("streams")
    first_ms = int(r.xrange(S, count=1)[0][0].split("-")[0])
    assert f"  oldest entry {time.strftime('%Y-%m-%d', time.gmtime(first_ms / 1000))}" in out
    assert "ago)" in out
    assert "  retention: keeps 7 d; last trim 0 s ago by manage.py trim:" in out
    listed = json.loads(run("streams", "--json"))["streams"]
    mine = next(s for s in listed if s["name"] == S)
    assert mine["first_id"] == r.xrange(S, count=1)[0][0]
    assert mine["retention"]["by"] == "manage.py trim"
