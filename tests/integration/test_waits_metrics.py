"""The waiting runs in a sample (one ZCARD in the per-stream pipeline) and in the metrics."""

from __future__ import annotations

import redis

from tests.support.scrape import parse, value
from tests.support.waits import run_hash, sleep, wait_for
from workers.core.keys import DEFAULT_STREAM, Keys
from workers.monitor.prometheus import exposition
from workers.monitor.sample import collect


def test_sample_and_metrics_count_waiting_runs(r: redis.Redis, redis_url: str) -> None:
    wait_for(redis_url, run_hash(1), {"data.order_id": 1})
    sleep(redis_url, run_hash(2))
    sample = collect(r, Keys(), extra_streams=(DEFAULT_STREAM, "other"))
    assert {s.name: s.waiting for s in sample.streams} == {DEFAULT_STREAM: 2, "other": 0}
    series = parse(exposition(lambda: sample, claim_idle_ms=1000).decode())
    assert value(series, "streamdesk_waiting_runs", stream=DEFAULT_STREAM) == 2
    assert value(series, "streamdesk_waiting_runs", stream="other") == 0
