"""What the registry declares about flow, in the form the scripts take it."""

from __future__ import annotations

from dataclasses import dataclass

from workers.core.registry import Registry


@dataclass(frozen=True, slots=True)
class FlowSpec:
    event_type: str
    # ``subject``, ``data.<path>``, or "" for the agent as a whole (``concurrency`` alone).
    path: str
    limit: int


def specs_of(registry: Registry) -> list[FlowSpec]:
    """The agents that declare ``key`` or ``concurrency``; ``key`` alone means one at a time."""
    out: list[FlowSpec] = []
    for spec in registry:
        declared = spec.declared
        if declared.key is None and declared.concurrency is None:
            continue
        out.append(FlowSpec(spec.type, declared.key or "", declared.concurrency or 1))
    return out


def spec_args(specs: list[FlowSpec]) -> list[str | int]:
    """The scripts' ARGV tail: a triple per keyed type."""
    args: list[str | int] = []
    for spec in specs:
        args += [spec.event_type, spec.path, spec.limit]
    return args
