"""docs/observability.md, the Grafana dashboard and the alert rules name only metrics the
exporter serves: the exporter's own output, from a sample with every kind of figure, is the
reference, so the docs cannot drift from the code."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from console.live.redis_info import node_info
from console.live.redis_metrics import exposition_of
from console.live.redis_panel import NodeReading, RedisReading
from tests.support.scrape import names
from workers.monitor.prometheus import exposition
from workers.monitor.sample import ConsumerInfo, GroupInfo, Sample, StreamInfo, WorkerInfo
from workers.redis import stats
from workers.runtime.ratelimit import Budget, Level

DOCS = Path(__file__).resolve().parents[2] / "docs"
METRIC = re.compile(r"\bstreamdesk_[a-z0-9_]+")
# Recording-rule style suffixes a family's samples carry.
SUFFIXES = ("_bucket", "_sum", "_count", "_total")


def full_sample() -> Sample:
    consumer = ConsumerInfo("w1", pending=1, idle_ms=5, inactive_ms=5, live=True)
    group = GroupInfo("s", "g", [consumer], 1, 0, 3, "3-0", "1-0", 2_000, paused_by="alice at noon")
    counters = dict.fromkeys(stats.COUNTERS, 1)
    stream = StreamInfo("s", True, 3, 3, "3-0", 1, counters, [group], first_id="1-0")
    worker = WorkerInfo("w1", "h", 1, "s", "g", 8, 1, 1, "", "running", 0, 0)
    level = Level(Budget("github", 5.0, 10), 4.5, 3, 1, 0)
    usage = {"demo.echo": dict.fromkeys(stats.USAGE_FIELDS, 1.0)}
    durations = stats.durations_by_type({"demo.echo|0.01": "2", "demo.echo|sum": "0.01"})
    return Sample(10_000, [stream], [worker], [level], usage, durations)


def redis_itself() -> str:
    """The console's gauges of Redis itself (console/live/redis_metrics.py), from one node."""
    info = node_info({"used_memory": 1, "maxmemory": 2, "evicted_keys": 3})
    reading = RedisReading([NodeReading("", info, "", [], "")], [])
    return exposition_of(lambda: reading).decode()


def served() -> set[str]:
    return names(exposition(full_sample, 60_000).decode()) | names(redis_itself())


def strings(node: Any, keys: tuple[str, ...]) -> Iterator[str]:
    if isinstance(node, dict):
        for key, value in node.items():
            if key in keys and isinstance(value, str):
                yield value
            yield from strings(value, keys)
    elif isinstance(node, list):
        for item in node:
            yield from strings(item, keys)


def dashboard_metrics() -> set[str]:
    dashboard = json.loads((DOCS / "grafana-dashboard.json").read_text())
    exprs = strings(dashboard, ("expr", "definition"))
    return {m for e in exprs for m in METRIC.findall(e)}


def alert_metrics() -> set[str]:
    lines = (DOCS / "alerts.yml").read_text().splitlines()
    return {m for line in lines if line.strip().startswith("expr:") for m in METRIC.findall(line)}


def test_observability_docs_sample_serves_every_family() -> None:
    # Every family has at least one series from the full sample, so none escapes the check.
    got = served()
    assert "streamdesk_agent_run_duration_seconds_bucket" in got
    assert "streamdesk_budget_deferrals_total" in got
    assert "streamdesk_model_tokens_total" in got


def test_observability_docs_dashboard_names_only_served_metrics() -> None:
    used = dashboard_metrics()
    assert len(used) > 20
    assert used - served() == set()


def test_observability_docs_alerts_name_only_served_metrics() -> None:
    used = alert_metrics()
    assert {"streamdesk_group_lag", "streamdesk_budget_tokens"} <= used
    assert used - served() == set()


def test_observability_docs_reference_table_is_what_is_served() -> None:
    text = (DOCS / "observability.md").read_text()
    documented = set(re.findall(r"^\| `(streamdesk_[a-z0-9_]+)` \|", text, re.MULTILINE))
    families = {n for n in served() if not n.endswith(SUFFIXES[:3])}
    histogram = "streamdesk_agent_run_duration_seconds"
    assert documented == (families | {histogram})


def test_observability_docs_alert_rules_parse_as_rule_groups() -> None:
    text = (DOCS / "alerts.yml").read_text()
    assert text.startswith("#") and "\ngroups:\n" in text
    alerts = re.findall(r"^ {6}- alert: (\w+)$", text, re.MULTILINE)
    exprs = re.findall(r"^ {8}expr: .+$", text, re.MULTILINE)
    assert len(alerts) == len(exprs) == 6
