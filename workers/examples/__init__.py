"""Example apps built on Streamdesk's public API, and what demo mode adds to the settings.

``console/settings.py`` installs ``DEMO_APPS`` and defaults the rate budgets to
``DEMO_RATE_LIMITS`` only with ``STREAMDESK_DEMO=1`` (``make run``); a default deployment has
none of them.
"""

from __future__ import annotations

DEMO_APPS = [
    # The outbox example (docs/outbox.md): a Ticket model and its routing agent.
    "workers.examples.tickets",
    # The agent runtime's examples (docs/agents.md) and the services they act on.
    "workers.examples.sandbox",
    "workers.examples.security",
    "workers.examples.github",
    # Registers its LangGraph agent only with the extra installed (pip install .[langgraph]).
    "workers.examples.deploys",
    # Asks an operator before a large refund (LangGraph interrupt() as a wait); the same.
    "workers.examples.refunds",
    # ``manage.py demoproducer``, which ``manage.py up`` starts in demo mode.
    "workers.examples.demo",
]

# The budgets of the example agents' tools (workers/examples/sandbox/services.py).
DEMO_RATE_LIMITS = "github=5/s:10,directory=20/s:20,vault=2/s:2,slack=1/s:5"
