"""LangGraph agents (the optional ``langgraph`` extra): a checkpoint saver on the project's
database and ``run_graph``, which runs a graph under its event's hash so a redelivered event
resumes at the last finished node. Importing this package imports LangGraph: agents modules
that must load without the extra import it behind a check (``workers/examples/deploys``)."""

from __future__ import annotations

from workers.runtime.graph.interrupts import InterruptWait
from workers.runtime.graph.run import GraphContext, run_graph
from workers.runtime.graph.saver import DjangoSaver, Fence

__all__ = ["DjangoSaver", "Fence", "GraphContext", "InterruptWait", "run_graph"]
