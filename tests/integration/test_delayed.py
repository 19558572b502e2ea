"""Delayed events against a real server: held until due, then in the stream exactly once,
however many movers race; nothing held on bad input; the publish CLI's --delay and --at."""

from __future__ import annotations

import threading
import time
from datetime import UTC, datetime, timedelta
from io import StringIO

import pytest
import redis
from django.core.management import CommandError, call_command

from workers import publish
from workers.core.errors import InvalidDelay, UnknownEventType
from workers.core.events import decode_envelope
from workers.core.keys import Keys
from workers.management.commands.publish import Command as PublishCommand
from workers.producers.publish import build_envelope
from workers.timers import Due, add, view
from workers.timers.delayed import Mover

STREAM = "streamdesk:events"
KEYS = Keys()


def entries(r: redis.Redis) -> list[str]:
    return [fields["event"] for _, fields in r.xrange(STREAM)]


def test_publish_with_a_delay_holds_the_event_and_keeps_its_id(r: redis.Redis) -> None:
    returned = publish("demo.echo", {"n": 1}, delay_s=30, id="follow-up-1")
    assert returned == "follow-up-1"
    assert not r.exists(STREAM)
    [(payload, due_ms)] = r.zrange(KEYS.delayed(STREAM), 0, -1, withscores=True)
    assert decode_envelope(payload).id == "follow-up-1"
    server_ms = r.time()[0] * 1000
    assert 29_000 <= due_ms - server_ms <= 31_000
    assert r.smembers(KEYS.delayed_streams) == {STREAM}


def test_publish_with_a_past_at_goes_in_at_once(r: redis.Redis) -> None:
    entry_id = publish("demo.echo", {"n": 1}, at=datetime.now(UTC) - timedelta(minutes=1))
    assert [i for i, _ in r.xrange(STREAM)] == [entry_id]
    assert not r.exists(KEYS.delayed(STREAM))


@pytest.mark.parametrize(
    "kwargs",
    [
        {"delay_s": -1},
        {"delay_s": 5, "at": time.time() + 60},
        {"at": datetime(2030, 1, 1)},  # naive
    ],
)
def test_publish_bad_delay_writes_nothing(r: redis.Redis, kwargs: dict[str, object]) -> None:
    with pytest.raises(InvalidDelay):
        publish("demo.echo", {"n": 1}, **kwargs)  # type: ignore[arg-type]
    assert r.keys("*") == []


def test_publish_delayed_unknown_type_writes_nothing(r: redis.Redis) -> None:
    with pytest.raises(UnknownEventType):
        publish("no.such", {}, delay_s=5)
    assert r.keys("*") == []


def test_move_due_moves_only_what_is_due(r: redis.Redis) -> None:
    now = build_envelope("demo.echo", {"n": 1}).to_json()
    later = build_envelope("demo.echo", {"n": 2}).to_json()
    add(r, KEYS, [(STREAM, now)], Due(delay_ms=1))
    add(r, KEYS, [(STREAM, later)], Due(delay_ms=60_000))
    time.sleep(0.01)
    moved = Mover(r, KEYS).move_due(STREAM)
    assert moved.moved == 1
    assert entries(r) == [now]
    assert moved.next_due_ms is not None
    assert 59_000 <= moved.next_due_ms - moved.server_ms <= 60_000


def test_move_due_three_movers_racing_move_each_event_once(r: redis.Redis) -> None:
    payloads = [build_envelope("demo.echo", {"n": n}).to_json() for n in range(3000)]
    add(r, KEYS, [(STREAM, p) for p in payloads], Due(delay_ms=1))
    time.sleep(0.01)
    clients = [redis.Redis(**r.connection_pool.connection_kwargs) for _ in range(3)]
    # Small batches: the three interleave many times over the same due events.
    movers = [Mover(c, KEYS, batch=50) for c in clients]
    start = threading.Barrier(3)
    moved = [0, 0, 0]

    def run(n: int) -> None:
        start.wait()
        moved[n] = movers[n].move_due(STREAM).moved

    threads = [threading.Thread(target=run, args=(n,)) for n in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sum(moved) == 3000
    assert sorted(entries(r)) == sorted(payloads)
    assert r.zcard(KEYS.delayed(STREAM)) == 0


@pytest.mark.serial  # a pub/sub channel is the whole server's: other processes' timers speak on it
def test_add_wakes_the_timer_only_when_first_due(r: redis.Redis) -> None:
    pubsub = r.pubsub(ignore_subscribe_messages=True)
    pubsub.subscribe(KEYS.timers_channel)
    pubsub.get_message(timeout=1)
    first = build_envelope("demo.echo", {"n": 1}).to_json()
    second = build_envelope("demo.echo", {"n": 2}).to_json()
    [due] = add(r, KEYS, [(STREAM, first)], Due(delay_ms=10_000))
    add(r, KEYS, [(STREAM, second)], Due(delay_ms=20_000))  # not the first due: no wake
    message = pubsub.get_message(timeout=1)
    assert message is not None and message["data"] == str(due)
    assert pubsub.get_message(timeout=0.2) is None
    pubsub.close()


def test_view_counts_delayed_events_and_first_due(r: redis.Redis) -> None:
    payloads = [build_envelope("demo.echo", {"n": n}).to_json() for n in range(3)]
    [due, *_] = add(r, KEYS, [(STREAM, p) for p in payloads], Due(delay_ms=5_000))
    seen = view.read(r, KEYS, [])
    assert seen.delayed == [view.DelayedRow(STREAM, 3, due)]
    assert (seen.delayed_total, seen.next_delayed_ms, seen.holder) == (3, due, None)


def test_cli_delay_prints_id_and_due(r: redis.Redis) -> None:
    out = StringIO()
    call_command("publish", "demo.echo", "--delay", "3", "--id", "cli-1", stdout=out)
    event_id, word, due = out.getvalue().split()
    assert (event_id, word) == ("cli-1", "due")
    assert datetime.fromisoformat(due) > datetime.now(UTC)
    assert r.zcard(KEYS.delayed(STREAM)) == 1


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--delay", "-2"], "--delay must be >= 0"),
        (["--at", "tomorrow"], "not an ISO-8601 time"),
        (["--at", "2030-01-01T09:00:00"], "needs its offset"),
    ],
)
def test_cli_bad_delay_is_an_error_and_writes_nothing(
    r: redis.Redis, args: list[str], message: str
) -> None:
    with pytest.raises(CommandError, match=message):
        call_command("publish", "demo.echo", *args, stdout=StringIO())
    assert r.keys("*") == []


def test_cli_delay_and_at_together_refused(r: redis.Redis) -> None:
    with pytest.raises(CommandError, match="not allowed with"):
        call_command(
            "publish",
            "demo.echo",
            "--delay",
            "3",
            "--at",
            "2030-01-01T09:00:00Z",
            stdout=StringIO(),
        )


def test_cli_help_documents_delay_and_at() -> None:
    text = PublishCommand().create_parser("manage.py", "publish").format_help()
    assert "--delay SECONDS" in text and "--at ISO-8601" in text
