"""Which consumer groups one worker process reads, and with which agents."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from workers.core.config import EngineConfig
from workers.core.errors import ConfigurationError
from workers.core.registry import AgentSpec, Registry

# Appended to a consumer's name in a named agent's group: ``host-1@triage``. Each group's
# loop is a consumer of its own (its heartbeat, its pending entries), as a partition's is.
CONSUMER_SEPARATOR = "@"


@dataclass(frozen=True, slots=True)
class Loop:
    """One read loop: a group on one stream (``config.group``), with the agents it runs."""

    config: EngineConfig
    registry: Registry


def select(registry: Registry, names: Sequence[str] = ()) -> tuple[bool, list[AgentSpec]]:
    """For ``runworker --agent NAME ...``: whether the home group is read, and which named
    agents. No names: all of them. An agent without a name is named by its event type, and
    selects the home group, which runs every agent without a name (they share it)."""
    if not names:
        return True, registry.named()
    home, named = False, []
    for name in dict.fromkeys(names):
        spec = registry.by_name(name)
        if spec is None:
            known = ", ".join(s.name for s in registry if not s.placeholder) or "none"
            raise ConfigurationError(f"no agent is named {name!r} (the agents: {known})")
        if spec.agent:
            named.append(spec)
        else:
            home = True
    return home, named


def lineup(
    configs: Sequence[EngineConfig], registry: Registry, names: Sequence[str] = ()
) -> list[Loop]:
    """One loop per group per partition stream (``configs``: one per partition)."""
    home, named = select(registry, names)
    loops: list[Loop] = []
    for config in configs:
        if home:
            loops.append(Loop(config, registry.home()))
        for spec in named:
            own = replace(
                config,
                group=spec.group(config.group),
                consumer=f"{config.consumer}{CONSUMER_SEPARATOR}{spec.agent}",
            )
            loops.append(Loop(own, registry.only(spec)))
    return loops
