"""GitHub issue triage: the model reads the issue, picks labels and calls ``label_issue``.

Raw tool calling: one ``run_tools`` loop, whose model calls and tool calls are durable
steps. With no LLM configured the built-in model follows ``triage_rules`` (keywords), so
``make run`` works offline and the tests repeat exactly.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field

from workers.core.events import Event
from workers.core.registry import agent
from workers.examples.sandbox import services
from workers.runtime.context import AgentContext
from workers.runtime.llm.loop import run_tools
from workers.runtime.llm.models import Message, ToolSchema, call_tool, reply

Label = Literal["bug", "enhancement", "question", "documentation", "security", "needs-triage"]

SYSTEM = (
    "You triage new GitHub issues. Read the issue, choose one to three labels from: bug, "
    "enhancement, question, documentation, security (and needs-triage when unsure). Call "
    "label_issue exactly once, then answer with one line saying what you did and why."
)

# The built-in model's rules: the first label whose words appear in the issue.
KEYWORDS: tuple[tuple[Label, tuple[str, ...]], ...] = (
    ("security", ("vulnerab", "cve", "leak", "xss", "injection", "token exposed")),
    ("bug", ("crash", "error", "exception", "fails", "broken", "traceback", "500")),
    ("documentation", ("docs", "readme", "typo", "documentation")),
    ("enhancement", ("feature", "support for", "would be nice", "add ", "allow")),
    ("question", ("how do", "how can", "is it possible", "?")),
)


class IssueOpened(BaseModel):
    repository: str = Field(pattern=r"^[\w.-]+/[\w.-]+$")
    number: int = Field(ge=1)
    title: str = Field(max_length=256)
    body: str = Field(default="", max_length=65_536)
    author: str


def labels_for(text: str) -> list[Label]:
    words = text.lower()
    found = [label for label, keys in KEYWORDS if any(k in words for k in keys)]
    return found[:3] or ["needs-triage"]


def triage_rules(messages: list[Message], tools: list[ToolSchema]) -> Message:
    """The deterministic stand-in for a model: label by keywords, then say so."""
    results = [m for m in messages if m.get("role") == "tool"]
    if results:
        return reply(f"Labelled the issue: {results[-1]['content']}")
    issue = str(messages[-1]["content"])
    labels = labels_for(issue)
    return call_tool("label_issue", labels=labels, reason=f"keywords matched: {labels}")


@agent("github.issue.opened", schema=IssueOpened)
async def triage_issue(event: Event[IssueOpened], ctx: AgentContext) -> dict[str, Any]:
    """Classify a new issue and label it on GitHub."""
    issue = event.data

    def label_issue(labels: list[Label], reason: str) -> dict[str, Any]:
        """Apply labels to the issue on GitHub. ``reason``: one line, for the audit trail."""
        key = ctx.idempotency_key(f"label_issue:{','.join(sorted(labels))}")
        return services.label_issue(issue.repository, issue.number, labels, key)

    result = await run_tools(
        ctx,
        ctx.model(rules=triage_rules),
        [
            {"role": "system", "content": SYSTEM},
            {"role": "user", "content": f"{issue.title}\n\n{issue.body}"},
        ],
        [label_issue],
        name="triage",
    )
    applied = [c.result for c in result.tool_calls if c.name == "label_issue" and not c.error]
    return {
        "issue": f"{issue.repository}#{issue.number}",
        "labels": applied[-1]["labels"] if applied else [],
        "summary": result.text,
        "model_calls": result.iterations,
    }
