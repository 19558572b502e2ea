"""What an agent declares about its runs, applied: its timeout, how its failures are told
apart (a timeout, ``NonRetriable``, a Retry-After to wait out) and its ``on_failure`` hook.
The declarations themselves are data in ``workers/core`` (``registry.Declared``,
``retry.Retry``); the decisions that follow are ``core/retry.RetryPolicy``'s.

May import ``workers.core`` only. The engine reaches it through this module alone (never
its submodules): ``invoke.py`` runs an agent within its timeout and sorts its failure,
``outcomes.py`` applies its retry policy, ``settle.py`` calls its hook once it is
dead-lettered.
"""

from __future__ import annotations

from workers.core.registry import AgentSpec
from workers.core.retry import RetryPolicy
from workers.policy.failures import Failure, classify, retry_after_s
from workers.policy.hooks import AgentFailure, FailureHooks
from workers.policy.timeouts import in_thread, within

__all__ = [
    "AgentFailure",
    "Failure",
    "FailureHooks",
    "classify",
    "in_thread",
    "max_deliveries_of",
    "policy_of",
    "retry_after_s",
    "timeout_s_of",
    "within",
]


def timeout_s_of(spec: AgentSpec, default_s: float) -> float:
    """The agent's own timeout, else the worker's (0: none)."""
    own = spec.declared.timeout_s
    return default_s if own is None else own


def max_deliveries_of(spec: AgentSpec, default: int) -> int:
    return spec.declared.max_deliveries or default


def policy_of(spec: AgentSpec, worker_policy: RetryPolicy) -> RetryPolicy:
    """The worker's policy with the agent's ``max_deliveries`` and ``retry`` over it."""
    declared = spec.declared
    return worker_policy.declared(declared.max_deliveries, declared.retry)
