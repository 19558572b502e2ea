"""Prometheus metrics built from one sample: what ``GET /metrics`` and ``manage.py metrics`` serve.

Every figure comes from ``workers.monitor.sample.collect`` (three pipelined round trips, no scan
of a stream or a pending entries list) and from counters every worker adds to in Redis, so each
console process and each exporter serves the same numbers whichever worker did the work.
Labels take bounded values only: stream, group and budget names from the deployment's
configuration, event types and agent names from the agent registry; never an event id or a
consumer name.
docs/observability.md lists every metric.
"""

from __future__ import annotations

import logging
import time
from collections import Counter
from collections.abc import Callable, Iterator

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
    Metric,
)
from prometheus_client.registry import Collector

from workers.core.fanout import agent_of
from workers.core.keys import DEFAULT_GROUP
from workers.core.redact import redact_text
from workers.monitor.sample import GroupInfo, Sample, StreamInfo
from workers.redis.stats import COUNTERS

log = logging.getLogger("streamdesk.metrics")

# The classic text format every Prometheus (2.x and 3.x) and agent reads; every name and label
# here is a legacy one, so the body is the same as in the library's newer 1.0.0 format.
CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
STREAM, GROUP = ["stream"], ["stream", "group"]

# Each engine counter (``workers.redis.stats.COUNTERS``) as ``streamdesk_events_<name>_total``.
COUNTER_HELP = {
    "processed": "Events whose agent ran and whose result was committed.",
    "failed": "Failed attempts: the agent raised (each attempt counts).",
    "dead_lettered": "Entries moved to the stream's dead-letter stream.",
    "idempotency_hits": "Duplicates of a finished event: acknowledged, nothing ran.",
    "busy": "Deliveries whose event another live worker held the lease of.",
    "fenced": "Results refused because the lease had been taken over.",
    "deleted": "Pending entries whose payload had been deleted from the stream.",
    "reclaimed": "Entries taken over from idle consumers.",
    "retried": "Entries held back for a retry's backoff, taken up again when due.",
    "deferred": "Agents out of a rate budget, rerun when their token is due.",
    "retries": "Failed attempts held for their backoff to run again.",
    "cancelled": "Runs an operator cancelled: the agent stopped or never ran.",
    "waits": "Runs that gave back their slot to wait (a sleep, an awaited event).",
    "answers": "Waits an event answered: the waiting run resumed.",
}


def _seconds(ms: int | None) -> float:
    return 0.0 if ms is None else ms / 1000


def _entry_age_s(entry_id: str | None, at_ms: int) -> float:
    """How long ago the entry was added: its id's milliseconds part (0 if it has none)."""
    if not entry_id:
        return 0.0
    try:
        return max(at_ms - int(entry_id.split("-", 1)[0]), 0) / 1000
    except ValueError:  # an id a producer chose: its time is unknown
        return 0.0


def stream_families(sample: Sample) -> Iterator[Metric]:
    up = GaugeMetricFamily(
        "streamdesk_stream_up",
        "1 if the stream could be read in this scrape, else 0.",
        labels=STREAM,
    )
    length = GaugeMetricFamily("streamdesk_stream_length", "Entries in the stream.", labels=STREAM)
    added = CounterMetricFamily(
        "streamdesk_stream_entries_added", "Entries ever added (Redis 7 and later).", labels=STREAM
    )
    dead = GaugeMetricFamily(
        "streamdesk_stream_dead_letters", "Entries in the dead-letter stream.", labels=STREAM
    )
    oldest = GaugeMetricFamily(
        "streamdesk_stream_oldest_entry_age_seconds",
        "Age of the stream's first entry, from its id: how far back it reaches (absent if empty).",
        labels=STREAM,
    )
    waiting = GaugeMetricFamily(
        "streamdesk_waiting_runs",
        "Runs waiting for an event or a time (ctx.wait_for_event, ctx.sleep), holding no slot.",
        labels=STREAM,
    )
    counters = {
        name: CounterMetricFamily(
            f"streamdesk_events_{name}", COUNTER_HELP.get(name, name), labels=STREAM
        )
        for name in COUNTERS
    }
    for s in sample.streams:
        up.add_metric([s.name], 0 if s.error else 1)
        length.add_metric([s.name], s.length)
        if s.entries_added is not None:
            added.add_metric([s.name], s.entries_added)
        dead.add_metric([s.name], s.dead_letters)
        if s.first_id:
            oldest.add_metric([s.name], _entry_age_s(s.first_id, sample.at_ms))
        waiting.add_metric([s.name], s.waiting)
        for name in COUNTERS:
            counters[name].add_metric([s.name], s.counters.get(name, 0))
    yield from (up, length, added, dead, oldest, waiting, *counters.values())


def group_families(sample: Sample) -> Iterator[Metric]:
    gauges = {
        "lag": "Entries not yet delivered to the group (absent when Redis cannot tell).",
        "pending": "Entries delivered and not yet acknowledged.",
        "oldest_pending_idle_seconds": "Idle time of the oldest pending entry (0 if none).",
        "oldest_pending_age_seconds": "Age of the oldest pending entry, from its id (0 if none).",
        "paused": "1 while an operator has the group paused, else 0.",
    }
    out = {
        k: GaugeMetricFamily(f"streamdesk_group_{k}", v, labels=GROUP) for k, v in gauges.items()
    }
    consumers = GaugeMetricFamily(
        "streamdesk_group_consumers",
        "The group's consumers: live (a worker heartbeat) or orphaned (none).",
        labels=[*GROUP, "state"],
    )
    pruned = CounterMetricFamily(
        "streamdesk_group_consumers_pruned",
        "Ghost consumers removed by the workers' housekeeping.",
        labels=GROUP,
    )
    for s in sample.streams:
        for g in s.groups:
            _add_group(out, consumers, pruned, s, g, sample.at_ms)
    yield from (*out.values(), consumers, pruned)


def _add_group(
    out: dict[str, GaugeMetricFamily],
    consumers: GaugeMetricFamily,
    pruned: CounterMetricFamily,
    s: StreamInfo,
    g: GroupInfo,
    at_ms: int,
) -> None:
    labels = [s.name, g.name]
    if g.lag is not None:
        out["lag"].add_metric(labels, g.lag)
    out["pending"].add_metric(labels, g.pending)
    out["oldest_pending_idle_seconds"].add_metric(labels, _seconds(g.oldest_pending_idle_ms))
    out["oldest_pending_age_seconds"].add_metric(labels, _entry_age_s(g.oldest_pending_id, at_ms))
    out["paused"].add_metric(labels, 1 if g.paused_by else 0)
    live = g.live_consumers
    # Both states always, so "no live consumer" is a 0 to alert on, not a missing series.
    consumers.add_metric([*labels, "live"], live)
    consumers.add_metric([*labels, "orphaned"], len(g.consumers) - live)
    pruned.add_metric(labels, g.consumers_pruned)


def agent_label(home: str, group: str) -> str:
    """The ``agent`` label of a group: its agent's name, "" for the home group (every agent
    declared without a name) and for a group of no agent of this home's."""
    return agent_of(home, group) or ""


def group_counter_families(sample: Sample, home: str) -> Iterator[Metric]:
    """Per consumer group, so per agent (issue 31): the engine counters its workers add to
    ``Keys.group_stats`` beside the stream's, one family with the counter as ``outcome``."""
    events = CounterMetricFamily(
        "streamdesk_group_events",
        "The group's engine counters (its agent's): outcome is the counter's name.",
        labels=[*GROUP, "agent", "outcome"],
    )
    for s in sample.streams:
        for g in s.groups:
            agent = agent_label(home, g.name)
            for name in COUNTERS:
                events.add_metric([s.name, g.name, agent, name], g.counters.get(name, 0))
    yield events


def worker_families(sample: Sample) -> Iterator[Metric]:
    """Workers with a heartbeat, summed per stream and group (no series per process)."""
    count: Counter[tuple[str, str]] = Counter()
    slots: Counter[tuple[str, str]] = Counter()
    inflight: Counter[tuple[str, str]] = Counter()
    for w in sample.workers:
        count[(w.stream, w.group)] += 1
        slots[(w.stream, w.group)] += w.concurrency
        inflight[(w.stream, w.group)] += w.inflight
    families = (
        ("streamdesk_workers", "Worker processes with a live heartbeat.", count),
        ("streamdesk_worker_slots", "Agents the live workers may run at once.", slots),
        ("streamdesk_worker_inflight", "Agents the live workers are running.", inflight),
    )
    for name, help_text, values in families:
        family = GaugeMetricFamily(name, help_text, labels=GROUP)
        for labels, value in sorted(values.items()):
            family.add_metric(list(labels), value)
        yield family


def type_families(sample: Sample) -> Iterator[Metric]:
    """Per event type: the run duration histogram and the model usage paid for."""
    runs = HistogramMetricFamily(
        "streamdesk_agent_run_duration_seconds",
        "How long agents ran (each attempt that ended, succeeded or failed).",
        labels=["type"],
    )
    for event_type, d in sorted(sample.durations.items()):
        runs.add_metric([event_type], [(le, float(n)) for le, n in d.buckets], d.sum_s)
    calls = CounterMetricFamily("streamdesk_model_calls", "Model calls paid for.", labels=["type"])
    tokens = CounterMetricFamily(
        "streamdesk_model_tokens", "Model tokens paid for.", labels=["type", "kind"]
    )
    cost = CounterMetricFamily(
        "streamdesk_model_cost_usd", "What model calls cost, in US dollars.", labels=["type"]
    )
    for event_type, usage in sorted(sample.usage.items()):
        calls.add_metric([event_type], usage["calls"])
        tokens.add_metric([event_type, "prompt"], usage["prompt_tokens"])
        tokens.add_metric([event_type, "completion"], usage["completion_tokens"])
        cost.add_metric([event_type], usage["cost_usd"])
    yield from (runs, calls, tokens, cost)


def budget_families(sample: Sample) -> Iterator[Metric]:
    label = ["budget"]
    tokens = GaugeMetricFamily(
        "streamdesk_budget_tokens",
        "Tokens in the budget now, refilled; below 0 while reservations wait.",
        labels=label,
    )
    burst = GaugeMetricFamily("streamdesk_budget_burst", "Most tokens it saves up.", labels=label)
    rate = GaugeMetricFamily(
        "streamdesk_budget_rate_per_second", "Tokens it gains a second.", labels=label
    )
    waiting = GaugeMetricFamily(
        "streamdesk_budget_waiting", "Events holding a reserved token now.", labels=label
    )
    taken = CounterMetricFamily(
        "streamdesk_budget_taken", "Tokens taken: calls let through.", labels=label
    )
    deferrals = CounterMetricFamily(
        "streamdesk_budget_deferrals", "Events deferred for want of a token.", labels=label
    )
    keyed = GaugeMetricFamily(
        "streamdesk_budget_keyed_buckets",
        "Live per-value buckets of a keyed budget.",
        labels=label,
    )
    for level in sample.budgets:
        name = [level.budget.name]
        keyed.add_metric(name, level.keyed)
        tokens.add_metric(name, level.tokens)
        burst.add_metric(name, level.budget.burst)
        rate.add_metric(name, level.budget.rate)
        waiting.add_metric(name, level.waiting)
        taken.add_metric(name, level.taken)
        deferrals.add_metric(name, level.deferrals)
    yield from (tokens, burst, rate, waiting, taken, deferrals, keyed)


def families(sample: Sample, home: str = DEFAULT_GROUP) -> Iterator[Metric]:
    """Every family one sample gives (without the scrape's own ``streamdesk_up``); ``home``:
    the home group's name, which tells each group's agent."""
    yield from stream_families(sample)
    yield from group_families(sample)
    yield from group_counter_families(sample, home)
    yield from worker_families(sample)
    yield from type_families(sample)
    yield from budget_families(sample)


class SampleCollector(Collector):
    """Reads a sample on every scrape. A failed read is ``streamdesk_up 0`` and its reason
    (``error``), never an exception: Prometheus then records why, not a failed scrape."""

    def __init__(
        self, read: Callable[[], Sample], claim_idle_ms: int, home: str = DEFAULT_GROUP
    ) -> None:
        self.read = read
        self.claim_idle_ms = claim_idle_ms
        self.home = home
        self.error = ""

    def collect(self) -> Iterator[Metric]:
        started = time.perf_counter()
        try:
            sample = self.read()
        except Exception as exc:  # Redis down, a refused command: the scrape still answers
            self.error = _reason(exc)
            log.warning("metrics: the sample cannot be read: %s", self.error)
        else:
            self.error = ""
            yield from families(sample, self.home)
        yield GaugeMetricFamily(
            "streamdesk_up",
            "1 if Redis answered this scrape's sample, else 0.",
            0 if self.error else 1,
        )
        yield GaugeMetricFamily(
            "streamdesk_scrape_duration_seconds",
            "How long reading this scrape's sample took.",
            time.perf_counter() - started,
        )
        yield GaugeMetricFamily(
            "streamdesk_claim_idle_seconds",
            "Idle time before a worker reclaims a pending entry (this process's setting).",
            self.claim_idle_ms / 1000,
        )


def _reason(exc: BaseException) -> str:
    """One line, no credentials: the cause (host and port) rather than a URL."""
    cause = exc.__cause__ or exc
    text = " ".join(str(cause).split()) or type(cause).__name__
    return redact_text(f"{type(cause).__name__}: {text}")[:300]


def exposition(read: Callable[[], Sample], claim_idle_ms: int, home: str = DEFAULT_GROUP) -> bytes:
    """The text format of one scrape. When the sample cannot be read, a last comment line
    says why (Prometheus ignores comments; a person reading the page sees it)."""
    registry = CollectorRegistry(auto_describe=False)
    collector = SampleCollector(read, claim_idle_ms, home)
    registry.register(collector)
    body = generate_latest(registry)
    if collector.error:
        body += f"# streamdesk_up is 0: {collector.error}\n".encode()
    return body
