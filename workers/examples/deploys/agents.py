"""Registers the ``deploy.failed`` agent when LangGraph imports; without the extra this app
registers nothing, quietly (a worker without it still starts, and publishing a
``deploy.failed`` event is refused as an unknown type)."""

from __future__ import annotations

from workers.registry import default_registry


def _langgraph_installed() -> bool:
    try:
        import langgraph  # noqa: F401
    except ImportError:
        return False
    return True


if _langgraph_installed():
    # Imported here only: the module imports LangGraph at its top.
    from workers.examples.deploys.remediation import DeployFailed, remediate

    default_registry.register("deploy.failed", DeployFailed, remediate)
