"""The growing-stream warning on a real server: a stream past its retention that nothing
trims is named on the Redis page; a stream under retention that is merely busy is not, nor
one the trim keeps (XTRIM ~ leaves whole nodes). The lengths over the window are recorded
history points (through the recorder's own script), 1 minute apart over 15 minutes."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
import redis
from django.test import Client

from console.live.redis_panel import meter_for
from console.runtime import keys, redis_client
from tests.support.console import text
from tests.support.engine import STREAM
from tests.support.growth import record_growth
from workers import from_settings
from workers.retention import Retention, trim

DAY_MS = 86_400_000


@pytest.fixture(autouse=True)
def fresh_console_client(redis_url: str) -> Iterator[None]:
    """A console client of its own: the meters this test sets to read every tick go with it."""
    from_settings._client.cache_clear()
    yield
    from_settings._client.cache_clear()


def server_ms(r: redis.Redis) -> int:
    seconds, micros = r.time()
    return int(seconds) * 1000 + int(micros) // 1000


def stream_since(r: redis.Redis, oldest_age_ms: int) -> None:
    """A stream whose first entry is ``oldest_age_ms`` old, with recent ones after it, and
    a group that has read nothing."""
    now = server_ms(r)
    r.xadd(STREAM, {"event": "{}"}, id=f"{now - oldest_age_ms}-0")
    for n in range(5):
        r.xadd(STREAM, {"event": "{}"}, id=f"{now - 60_000 + n}-0")
    r.xgroup_create(STREAM, "agents", id="0")
    r.sadd("streamdesk:stats:streams", STREAM)


def page(client: Client) -> str:
    meter_for(redis_client()).read_every_s = 0
    return text(client.get("/redis/"))


def test_a_stream_past_its_retention_no_one_trims_is_named(
    r: redis.Redis, staff_client: Client
) -> None:
    stream_since(r, 8 * DAY_MS)  # the console's retention: 7 days (the default)
    record_growth(r, STREAM)
    body = page(staff_client)
    assert f'data-growth="{STREAM}"' in body
    assert "grew from 842 to 2,792 entries in the last 15 min 0 s and is not trimmed" in body
    assert "no worker has trimmed it" in body
    assert f"{STREAM} grows and is not trimmed" in text(staff_client.get("/"))


def test_a_trim_held_back_by_a_group_is_named(r: redis.Redis, staff_client: Client) -> None:
    stream_since(r, 8 * DAY_MS)
    record_growth(r, STREAM)
    trim(r, keys(), STREAM, Retention(7 * 86_400), by="test")  # agents read nothing: held
    assert "group agents holds the trim back" in page(staff_client)


def test_a_stream_the_trim_keeps_is_not_named(r: redis.Redis, staff_client: Client) -> None:
    """Acknowledged, trimmed a moment ago: XTRIM ~ left its node (the oldest entry is still
    8 days old), which is the retention working, not trouble."""
    stream_since(r, 8 * DAY_MS)
    r.xreadgroup("agents", "w-1", {STREAM: ">"})
    r.xack(STREAM, "agents", *[e[0] for e in r.xrange(STREAM)])
    record_growth(r, STREAM)
    done = trim(r, keys(), STREAM, Retention(7 * 86_400), by="test")
    assert done.status == "trimmed" and not done.held_by
    assert r.xlen(STREAM) == 6  # nothing went: one node
    body = page(staff_client)
    assert "data-growth=" not in body
    assert "None: no eviction policy that can drop" in body


def test_a_busy_stream_within_its_retention_is_not_named(
    r: redis.Redis, staff_client: Client
) -> None:
    stream_since(r, 2 * DAY_MS)
    record_growth(r, STREAM)
    assert "data-growth=" not in page(staff_client)


def test_retention_off_and_growing_is_named(
    r: redis.Redis, staff_client: Client, settings: Any
) -> None:
    """Young, but nothing will ever trim it: STREAMDESK_RETENTION_S=0, no length cap."""
    settings.STREAMDESK = {**settings.STREAMDESK, "retention_s": 0}
    stream_since(r, 20 * 60_000)
    record_growth(r, STREAM)
    assert "retention is off (STREAMDESK_RETENTION_S=0, no STREAMDESK_MAX_LEN)" in page(
        staff_client
    )


def test_without_recorded_history_growth_is_not_judged(
    r: redis.Redis, staff_client: Client
) -> None:
    stream_since(r, 8 * DAY_MS)  # would be named, had it been seen growing
    body = page(staff_client)
    assert "data-growth=" not in body
    assert "growth is not judged yet: no history was recorded over the last 15 min" in body
