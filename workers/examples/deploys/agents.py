"""Registers the ``deploy.failed`` agent when LangGraph is installed; without the extra this
app registers nothing, quietly (a worker without it still starts, and publishing a
``deploy.failed`` event is refused as an unknown type).

LangGraph takes about a second to import: the graph module is imported when the first
failed deploy arrives, not when a worker (or ``manage.py`` anything) starts.
"""

from __future__ import annotations

from importlib.util import find_spec
from typing import Any

from workers.core.events import Event
from workers.core.registry import default_registry
from workers.examples.deploys.schemas import DeployFailed
from workers.runtime.context import AgentContext


async def remediate(event: Event[DeployFailed], ctx: AgentContext) -> dict[str, Any]:
    """Diagnose a failed deploy, then roll back or notify (a LangGraph graph)."""
    from workers.examples.deploys import remediation

    return await remediation.remediate(event, ctx)


if find_spec("langgraph") is not None:
    default_registry.register("deploy.failed", DeployFailed, remediate)
