"""Per agent, the plain-Python parts (issue 31): the lines the Agents pages draw from one
sample, the agent label of each group in ``/metrics``, an entry's state from several runs,
and the run figures read from the database. No server needed."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from console.live.agent_lines import agent_lines, home_group, with_runs
from console.live.overview import build
from console.reads.agent_runs import RunFigures
from console.reads.entry_states import least_finished
from tests.support.engine import AnyData
from tests.support.scrape import parse, value
from workers.core.registry import Registry
from workers.monitor.prometheus import exposition
from workers.monitor.sample import ConsumerInfo, GroupInfo, Sample, StreamInfo, group_counters
from workers.redis import stats

STREAM = "s"


def group(name: str, pending: int = 0, lag: int | None = 0, **counts: int) -> GroupInfo:
    consumer = ConsumerInfo("w1", pending, 10, None, True)
    return GroupInfo(
        STREAM,
        name,
        [consumer],
        pending,
        lag,
        0,
        "0-0",
        None,
        None,
        counters={**dict.fromkeys(stats.COUNTERS, 0), **counts},
    )


def sample(*groups: GroupInfo) -> Sample:
    counters = dict.fromkeys(stats.COUNTERS, 0)
    return Sample(1_000, [StreamInfo(STREAM, True, 10, 10, "9-0", 0, counters, list(groups))], [])


def registry() -> Registry:
    found = Registry()

    async def handler(event: Any, ctx: Any) -> None:
        return None

    async def other(event: Any, ctx: Any) -> None:
        return None

    async def third(event: Any, ctx: Any) -> None:
        return None

    found.register("ticket.created", AnyData, handler, name="triage", version="t1")
    found.register("ticket.created", AnyData, other, name="summarise")
    found.register("demo.echo", AnyData, third)
    return found


def lines(s: Sample, reg: Registry | None = None, home: str = "agents") -> list[Any]:
    return agent_lines(build(s, [], 60_000, home), reg or registry(), home)


def test_agents_fanout_lines_one_per_agent_home_first() -> None:
    s = sample(
        group("agents", pending=1, processed=5),
        group("agents:triage", pending=2, lag=3, processed=7, dead_lettered=1),
        group("agents:summarise"),
    )
    got = lines(s)
    assert [(a.name, a.agent, a.group) for a in got] == [
        ("demo.echo", "", "agents"),
        ("summarise", "summarise", "agents:summarise"),
        ("triage", "triage", "agents:triage"),
    ]
    triage = got[2]
    assert (triage.pending, triage.lag, triage.version) == (2, 3, "t1")
    assert triage.counters["processed"] == 7 and triage.counters["dead_lettered"] == 1
    assert got[0].counters["processed"] == 5  # the home group's, shared


def test_agents_fanout_lines_a_named_agent_known_only_by_its_group() -> None:
    got = lines(sample(group("agents"), group("agents:ghost"), group("other-fleet")), Registry())
    assert [(a.name, a.event_type) for a in got] == [("ghost", "")]  # foreign groups: none
    assert with_runs(got, {"ghost": "t.x"})[0].event_type == "t.x"


def test_agents_fanout_lines_lag_unknown_when_one_stream_cannot_tell() -> None:
    other = StreamInfo("s2", True, 1, 1, "1-0", 0, dict.fromkeys(stats.COUNTERS, 0), [])
    s = sample(group("agents:triage", lag=None))
    s = Sample(1_000, [*s.streams, other], [])
    assert lines(s)[2].lag is None


def test_agents_fanout_home_group_line_and_labels() -> None:
    view = build(sample(group("fleet"), group("fleet:triage")), [], 60_000, "fleet")
    assert [g.agent for g in view.streams[0].groups] == ["", "triage"]
    assert home_group(view, "fleet").groups[0].info.name == "fleet"
    other = build(sample(group("agents")), [], 60_000, "fleet")
    assert other.streams[0].groups[0].agent is None  # not this home's


def test_agents_fanout_group_counters_zero_where_garbled() -> None:
    got = group_counters({"processed": "4", "failed": "x"})
    assert got["processed"] == 4 and got["failed"] == 0 and set(got) == set(stats.COUNTERS)
    assert group_counters(None) == dict.fromkeys(stats.COUNTERS, 0)


def test_agents_fanout_metrics_label_each_group_with_its_agent() -> None:
    s = sample(group("fleet", processed=3), group("fleet:triage", processed=2, failed=1))
    series = parse(exposition(lambda: s, 60_000, "fleet").decode())
    name = "streamdesk_group_events_total"
    assert value(series, name, stream=STREAM, group="fleet", agent="", outcome="processed") == 3
    got = value(series, name, stream=STREAM, group="fleet:triage", agent="triage", outcome="failed")
    assert got == 1


def test_agents_fanout_entry_reads_as_its_least_finished_run() -> None:
    assert least_finished(["succeeded", "dead"]) == "dead"
    assert least_finished(["dead", "running"]) == "running"
    assert least_finished(["succeeded", "succeeded"]) == "succeeded"
    assert least_finished(["failed", "waiting", "succeeded"]) == "waiting"


def test_agents_fanout_run_figures_nearest_rank_quantiles() -> None:
    figures = RunFigures(durations_ms=[float(n) for n in range(1, 101)])
    assert figures.quantile_ms(0.5) == 50 and figures.quantile_ms(0.95) == 95
    assert figures.quantile_ms(0.99) == 99 and figures.quantile_ms(1.0) == 100
    assert RunFigures().quantile_ms(0.5) is None


def test_agents_fanout_failure_share_windows_by_agent() -> None:
    from console.reads.agent_runs import count

    now = datetime(2026, 12, 6, 12, 0, tzinfo=UTC)
    rows = [("triage", "succeeded", now), ("summarise", "dead", now - timedelta(minutes=2))]
    shares = count(rows, now, now - timedelta(hours=24))
    assert shares["summarise"]["5m"].pct == 100.0 and shares["triage"]["5m"].pct == 0.0


def test_agents_fanout_tick_renders_the_home_groups_figures_once(settings: Any) -> None:
    from console.live import realtime
    from console.live.sampler import agent_fragments

    got = agent_fragments(lines(sample(group("agents", pending=4), group("agents:triage"))))
    home = got[realtime.agent_key("demo.echo")]
    assert "Pause home group" in got[realtime.operator_variant(realtime.agent_key("demo.echo"))]
    assert "Pause" not in home and 'data-metric="pending">4<' in home
    assert "Pause agent" in got[realtime.operator_variant(realtime.agent_key("triage"))]


def test_agents_fanout_a_type_only_named_agents_ran_is_no_agent_of_its_own() -> None:
    from dataclasses import replace as changed

    from console.live.agent_rows import AgentRow

    row = AgentRow("t.x", 3, None, None, None, None, None, 0, 0, 0, 0.0, None)
    view = build(sample(group("agents"), group("agents:triage")), [], 60_000, "agents")
    view = changed(view, agents=[row])
    got = agent_lines(view, Registry(), "agents")  # a console that loads no agent
    assert [a.name for a in got] == ["t.x", "triage"]  # the histogram's type looks like one
    # Its runs say triage is of t.x and no agent without a name ran t.x: only triage.
    assert [a.name for a in with_runs(got, {"triage": "t.x"})] == ["triage"]
    # With runs of t.x by an agent without a name, both are agents.
    assert [a.name for a in with_runs(got, {"triage": "t.x", "t.x": "t.x"})] == ["t.x", "triage"]
