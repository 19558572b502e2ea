"""The console's Timers page against a real Redis and database: the schedules and when each
is next due, the delayed events per stream, and who runs the timer."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import redis
from django.test import Client

from workers import publish
from workers.core.keys import Keys
from workers.redis.pipelines import server_ms
from workers.timers import default_schedules, schedule

STREAM = "streamdesk:events"


@pytest.fixture
def nightly() -> Iterator[str]:
    schedule("30 2 * * *", type="demo.echo", data={"n": 1}, name="nightly-report")
    yield "nightly-report"
    default_schedules.remove("nightly-report")


def test_timers_page_lists_schedules_with_next_due(
    r: redis.Redis, viewer_client: Client, nightly: str
) -> None:
    page = viewer_client.get("/timers/")
    assert page.status_code == 200
    text = page.content.decode()
    assert "nightly-report" in text and "30 2 * * *" in text
    assert "02:30:00 UTC" in text  # the next tick, 02:30 UTC today or tomorrow
    assert "not yet" in text  # never published


def test_timers_page_shows_delayed_count_and_next_due(
    r: redis.Redis, viewer_client: Client
) -> None:
    for n in range(3):
        publish("demo.echo", {"n": n}, delay_s=630 + n)
    text = viewer_client.get("/timers/").content.decode()
    assert "data-delayed" in text
    assert '<td class="num">3</td>' in text
    assert "in 10 min" in text


def test_timers_page_says_when_nothing_waits(r: redis.Redis, viewer_client: Client) -> None:
    text = viewer_client.get("/timers/").content.decode()
    assert "No delayed events waiting" in text
    assert "none at the moment" in text


def test_timers_page_shows_the_last_published_tick(
    r: redis.Redis, viewer_client: Client, nightly: str
) -> None:
    tick = server_ms(r) - 3_600_000
    r.hset(Keys().schedule_ticks(STREAM), mapping={nightly: tick, f"{nightly}|published": tick})
    text = viewer_client.get("/timers/").content.decode()
    assert "1 h 0 min ago" in text
    assert "data-skipped" not in text


def test_timers_page_says_when_a_tick_was_skipped(
    r: redis.Redis, viewer_client: Client, nightly: str
) -> None:
    published = server_ms(r) - 7_200_000
    ticks = {nightly: published + 3_600_000, f"{nightly}|published": published}
    r.hset(Keys().schedule_ticks(STREAM), mapping=ticks)
    text = viewer_client.get("/timers/").content.decode()
    assert "2 h 0 min ago" in text
    assert "skipped" in text and "1 h 0 min ago" in text
    assert "missed by more than its grace" in text


def test_timers_page_needs_a_signed_in_user(r: redis.Redis, client: Client) -> None:
    assert client.get("/timers/").status_code == 302


def test_timers_page_is_in_the_navigation(r: redis.Redis, viewer_client: Client) -> None:
    text = viewer_client.get("/").content.decode()
    assert 'href="/timers/"' in text
