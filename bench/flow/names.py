"""Names the agents (bench/flow/agents.py) and the measuring side share; importing this
registers no agent."""

from __future__ import annotations

KEYED_TYPE = "flow.keyed"
PLAIN_TYPE = "flow.plain"
ORDER_TYPE = "flow.order"
HUNG_TYPE = "flow.hung"
AGENT_MODULE = "bench.flow.agents"

ORDER_KEY = "benchflow:order"  # list of "start|end subject seq pid time_ns"
HUNG_KEY = "benchflow:hung"  # list of "start|end n time_ns"

HUNG_TIMEOUT_S = 1.0
MAX_DELIVERIES = 3
