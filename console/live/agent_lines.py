"""One line per agent (issue 31): named agents each on their own, a home agent by its type.

An agent declared with a name reads the stream in a consumer group of its own
(``agents:<name>``, workers/core/fanout.py): its pending entries, lag, pause and counters
are that group's. The agents declared without one share the home group, so a home agent's
line shows the home group's figures (what every agent showed before names). The run
duration histogram and the usage hash are kept per event type by the engine: a home
agent's line carries its type's (``AgentRow``), a named agent's none (its run figures come
from the database on its page, ``console/reads/agent_runs.py``). Plain Python, no I/O: the
sampler builds these from its sample each tick.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace

from console.live.agent_rows import AgentRow
from console.live.overview import GroupRow, Overview
from workers.core.fanout import agent_of
from workers.core.registry import Registry
from workers.redis import stats


@dataclass(frozen=True, slots=True)
class AgentLine:
    name: str  # the agent's name; its event type for a home agent (``AgentSpec.name``)
    agent: str  # "" for a home agent (``AgentRun.agent``)
    event_type: str  # "" when neither this console's registry nor a histogram knows it
    group: str
    # Its group on each stream that has it (partitions, several streams), by stream name.
    groups: list[GroupRow] = field(default_factory=list)
    # The run duration histogram and usage of its type: home agents only (see module doc).
    figures: AgentRow | None = None
    # The version this console's registry declares ("" when it does not load the agent).
    version: str = ""
    # True when this console's registry declares it (else it is known by a group or runs).
    declared: bool = False

    @property
    def home(self) -> bool:
        return not self.agent

    @property
    def pending(self) -> int:
        return sum(g.info.pending for g in self.groups)

    @property
    def lag(self) -> int | None:
        """Undelivered entries over its groups; None when Redis cannot tell for one."""
        lags = [g.info.lag for g in self.groups]
        return None if not lags or any(x is None for x in lags) else sum(x or 0 for x in lags)

    @property
    def paused(self) -> list[GroupRow]:
        return [g for g in self.groups if g.info.paused_by]

    @property
    def ack_s(self) -> float | None:
        rates = [g.rates.ack_s for g in self.groups if g.rates.ack_s is not None]
        return sum(rates) if rates else None

    @property
    def counters(self) -> dict[str, int]:
        """Its group's counters summed over streams (a home agent: the home group's, which
        every agent without a name shares)."""
        return {c: sum(g.info.counters.get(c, 0) for g in self.groups) for c in stats.COUNTERS}


def agent_lines(view: Overview, registry: Registry, home: str) -> list[AgentLine]:
    """Every agent the registry declares, the groups of the streams name or the histogram
    knows: home agents by type first, then named ones by name."""
    by_type = {row.event_type: row for row in view.agents}
    groups: dict[str, list[GroupRow]] = {}
    for stream in view.streams:
        for g in stream.groups:
            groups.setdefault(g.info.name, []).append(g)
    lines: dict[str, AgentLine] = {}
    for spec in registry:
        if spec.placeholder:
            continue
        figures = None if spec.agent else by_type.get(spec.type)
        group = spec.group(home)
        found = groups.get(group, [])
        line = AgentLine(spec.name, spec.agent, spec.type, group, found, figures, spec.version)
        lines[spec.name] = replace(line, declared=True)
    for event_type, row in by_type.items():
        # A type whose runs this console's registry puts under named agents only is no home
        # agent (the histogram is per type, whichever agent ran).
        if event_type in lines or (event_type in registry and registry.get(event_type).agent):
            continue
        lines[event_type] = AgentLine(event_type, "", event_type, home, groups.get(home, []), row)
    for group in groups:
        agent = agent_of(home, group)
        if agent and agent not in lines:  # a named agent this console does not load
            lines[agent] = AgentLine(agent, agent, "", group, groups[group])
    return sorted(lines.values(), key=lambda a: (bool(a.agent), a.name))


def find(lines: list[AgentLine], name: str) -> AgentLine | None:
    return next((a for a in lines if a.name == name), None)


def with_runs(lines: list[AgentLine], types: Mapping[str, str]) -> list[AgentLine]:
    """The lines as the agents' runs in the database tell them (``types``: agent name -> the
    event type its runs were of, an agent without a name named by its type). A named agent
    this console does not load gets its type. A type the histogram alone knows, whose runs
    are all named agents' (none without a name) is left out: its histogram holds their runs,
    it is no agent of its own (the console's registry would have said so, had it one)."""
    out = [
        replace(a, event_type=types[a.name]) if not a.event_type and types.get(a.name) else a
        for a in lines
    ]
    named_types = {a.event_type for a in out if a.agent}
    return [
        a
        for a in out
        if a.agent or a.declared or a.name in types or a.event_type not in named_types
    ]


def home_group(view: Overview, home: str) -> AgentLine:
    """The home group as a line of its own: the figures every agent without a name shares,
    shown once rather than on each of their rows."""
    groups = [g for s in view.streams for g in s.groups if g.info.name == home]
    return AgentLine("", "", "", home, groups)
