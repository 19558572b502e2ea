"""What one replay is: the agent, its group, the range and the filters. Pure.

Built once at the door (``plan``: the agent looked up by name, the bounds parsed), kept on
the bulk job as its ``filter`` (``as_params``: the job's audit record shows it as the
target), and read back by the job's runner (``from_params``).
"""

from __future__ import annotations

import re
import secrets
from dataclasses import asdict, dataclass, field, replace
from typing import Any

from workers.core.errors import InvalidAction
from workers.core.registry import Registry
from workers.replay.bounds import LAST, check_order, parse_bound

MAX_SUBJECT_CHARS = 256
# Text JSON encoders write as it is: a raw search for it in an entry finds it if it is there
# (``/``, which some write ``\/``, is searched for both ways: lua/count.lua).
_PLAIN = re.compile(r"[A-Za-z0-9 _.:#@+=/-]*")


@dataclass(frozen=True, slots=True)
class Replay:
    agent: str  # as asked (``--agent``): a named agent, or a type's agent by its type
    run_name: str  # the agent's run-hash namespace: its name, "" for a type's home agent
    group: str  # its consumer group: the copies carry ``for=<group>``
    home: str  # the home group (``EngineConfig.group``): where a new group would start
    event_type: str
    streams: tuple[str, ...]  # the stream, or each of its partitions
    start: str  # an entry id or "-"
    end: str  # an entry id or "+" (the job keeps each stream's newest id instead: ``ends``)
    subject: str = ""
    force: bool = False
    # Each stream's last id when the job was queued: the job never chases its own copies.
    ends: tuple[str, ...] = ()
    # A forced replay's runs are keyed with it (``replay=<salt>``): the same for every copy
    # of one job, so a batch copied twice still runs once; new for every job, so a stale
    # gate record of an earlier replay never passes for this one's.
    salt: str = field(default_factory=lambda: secrets.token_hex(6))

    def end_of(self, index: int) -> str:
        return self.ends[index] if self.ends else self.end

    def with_ends(self, ends: list[str]) -> Replay:
        return replace(self, ends=tuple(ends))

    def as_params(self) -> dict[str, Any]:
        values = asdict(self)
        values["streams"], values["ends"] = list(self.streams), list(self.ends)
        return values

    @classmethod
    def from_params(cls, params: dict[str, Any]) -> Replay:
        values = dict(params)
        values["streams"] = tuple(values["streams"])
        values["ends"] = tuple(values.get("ends", ()))
        return cls(**values)

    @property
    def plain(self) -> bool:
        """Whether the type and subject may be searched for in an entry's raw text."""
        return bool(_PLAIN.fullmatch(self.event_type) and _PLAIN.fullmatch(self.subject))


def plan(
    registry: Registry,
    home: str,
    agent: str,
    streams: list[str],
    *,
    start: str | None = None,
    end: str | None = None,
    event_type: str = "",
    subject: str = "",
    force: bool = False,
) -> Replay:
    """The replay the input describes; ``InvalidAction`` naming the bad field."""
    spec = registry.by_name(agent.strip())
    if spec is None:
        known = ", ".join(sorted({s.name for s in registry if not s.placeholder})) or "none"
        raise InvalidAction("agent", f"no agent is named {agent.strip()!r} (the agents: {known})")
    event_type = event_type.strip()
    if event_type and event_type != spec.type:
        raise InvalidAction(
            "type", f"agent {spec.name} runs {spec.type!r} events, not {event_type!r}"
        )
    subject = subject.strip()
    if len(subject) > MAX_SUBJECT_CHARS:
        raise InvalidAction("subject", f"at most {MAX_SUBJECT_CHARS} characters")
    first, last = parse_bound(start, "from", end=False), parse_bound(end, "to", end=True)
    check_order(first, last)
    return Replay(
        agent=spec.name,
        run_name=spec.agent,
        group=spec.group(home),
        home=home,
        event_type=spec.type,
        streams=tuple(streams),
        start=first,
        end=last,
        subject=subject,
        force=force,
    )


__all__ = ["LAST", "Replay", "plan"]
