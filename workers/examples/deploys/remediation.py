"""The ``deploy.failed`` agent: a LangGraph graph, deterministic rules standing in for an LLM.

gather_context -> diagnose -> decide -> rollback -> notify, or decide -> notify. Each node's
result is checkpointed under the event's hash (``run_graph``), so a retried event starts at
the first node that did not finish. The two side effects are durable steps that pass an
idempotency key downstream: a node that dies half way and runs again does not roll back or
post twice.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal, TypedDict

from langgraph.graph import END, START, StateGraph
from langgraph.runtime import Runtime

from workers.core.events import Event
from workers.examples.deploys.schemas import DeployFailed
from workers.runtime.context import AgentContext
from workers.runtime.graph import GraphContext, run_graph

# Only production is rolled back on its own; elsewhere the deployer is told and decides.
AUTO_ROLLBACK_ENVIRONMENTS = ("production",)
DEFAULT_CHANNEL = "#deploys"


@dataclass(frozen=True, slots=True)
class Cause:
    name: str
    # Lowercase fragments of a log line that point at this cause; the first cause matching wins.
    patterns: tuple[str, ...]
    # Whether running the previous version fixes it (not for a migration: the schema stays).
    rollback_helps: bool


CAUSES = (
    Cause("out-of-memory", ("oomkilled", "out of memory", "memoryerror"), True),
    Cause("bad-build", ("modulenotfounderror", "importerror", "syntaxerror", "exec format"), True),
    Cause("crash-loop", ("crashloopbackoff", "segmentation fault", "panic:"), True),
    Cause("failed-migration", ("migration", "does not exist"), False),
    Cause("dependency-down", ("connection refused", "timed out", "name or service not"), False),
    Cause("health-check", ("health check", "readiness probe", "liveness probe"), True),
)
UNKNOWN = Cause("unknown", (), False)


class DeployState(TypedDict, total=False):
    deploy: dict[str, Any]  # the event's data
    facts: dict[str, Any]
    diagnosis: dict[str, Any]
    decision: dict[str, str]
    rollback: dict[str, Any]
    notice: dict[str, Any]


def gather_context(state: DeployState) -> DeployState:
    """What the decision needs besides the log (a real agent asks the deploy system)."""
    deploy = DeployFailed.model_validate(state["deploy"])
    return {
        "facts": {
            "can_roll_back": deploy.previous_version is not None,
            "auto_rollback": deploy.environment in AUTO_ROLLBACK_ENVIRONMENTS,
            "channel": f"#team-{deploy.team}" if deploy.team else DEFAULT_CHANNEL,
        }
    }


def diagnose(state: DeployState) -> DeployState:
    """The first known cause found in the log, with the line that shows it."""
    for line in reversed(state["deploy"]["error_log"].splitlines()):
        lowered = line.lower()
        for cause in CAUSES:
            if any(p in lowered for p in cause.patterns):
                return {"diagnosis": _diagnosis(cause, line.strip())}
    return {"diagnosis": _diagnosis(UNKNOWN, "")}


def _diagnosis(cause: Cause, evidence: str) -> dict[str, Any]:
    return {"cause": cause.name, "rollback_helps": cause.rollback_helps, "evidence": evidence}


def decide(state: DeployState) -> DeployState:
    facts, diagnosis = state["facts"], state["diagnosis"]
    if not diagnosis["rollback_helps"]:
        action, reason = "notify", f"a rollback does not fix {diagnosis['cause']}"
    elif not facts["can_roll_back"]:
        action, reason = "notify", "no previous version to roll back to"
    elif not facts["auto_rollback"]:
        action, reason = "notify", "not rolled back automatically outside production"
    else:
        action, reason = "rollback", f"{diagnosis['cause']}: the previous version ran"
    return {"decision": {"action": action, "reason": reason}}


def route(state: DeployState) -> Literal["rollback", "notify"]:
    return "rollback" if state["decision"]["action"] == "rollback" else "notify"


async def rollback(state: DeployState, runtime: Runtime[GraphContext]) -> DeployState:
    ctx = runtime.context.agent
    deploy = state["deploy"]
    request = {
        "service": deploy["service"],
        "environment": deploy["environment"],
        "to_version": deploy["previous_version"],
        "idempotency_key": ctx.idempotency_key("rollback"),
    }
    return {"rollback": await ctx.step("rollback", request_rollback, request)}


async def notify(state: DeployState, runtime: Runtime[GraphContext]) -> DeployState:
    ctx = runtime.context.agent
    deploy, decision = state["deploy"], state["decision"]
    text = (
        f"{deploy['service']} {deploy['version']} failed in {deploy['environment']}: "
        f"{state['diagnosis']['cause']}. "
        + (
            f"Rolled back to {deploy['previous_version']}."
            if decision["action"] == "rollback"
            else f"Not rolled back ({decision['reason']})."
        )
    )
    message = {
        "channel": state["facts"]["channel"],
        "text": text,
        "idempotency_key": ctx.idempotency_key("notify"),
    }
    return {"notice": await ctx.step("notify", post_message, message)}


def request_rollback(request: dict[str, Any]) -> dict[str, Any]:
    """Stands in for the deploy system's rollback call (it would send the idempotency key
    as a header, so a repeated request is a no-op there)."""
    return {**request, "status": "accepted"}


def post_message(message: dict[str, Any]) -> dict[str, Any]:
    """Stands in for a chat post carrying the idempotency key (Slack's ``client_msg_id``)."""
    return {**message, "status": "posted"}


def build() -> StateGraph[DeployState, GraphContext, DeployState, DeployState]:
    graph = StateGraph(DeployState, context_schema=GraphContext)
    graph.add_node("gather_context", gather_context)
    graph.add_node("diagnose", diagnose)
    graph.add_node("decide", decide)
    graph.add_node("rollback", rollback)
    graph.add_node("notify", notify)
    graph.add_edge(START, "gather_context")
    graph.add_edge("gather_context", "diagnose")
    graph.add_edge("diagnose", "decide")
    graph.add_conditional_edges("decide", route)
    graph.add_edge("rollback", "notify")
    graph.add_edge("notify", END)
    return graph


GRAPH = build().compile()


async def remediate(event: Event[DeployFailed], ctx: AgentContext) -> dict[str, Any]:
    """Diagnoses a failed deploy, rolls it back when that helps, and tells the team."""
    state = await run_graph(ctx, GRAPH, {"deploy": event.data.model_dump()})
    keys = ("diagnosis", "decision", "rollback", "notice")
    return {"service": event.data.service, **{k: state[k] for k in keys if k in state}}
