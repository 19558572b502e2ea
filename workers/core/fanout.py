"""Several agents on one event type: agent names, their consumer groups, their run hashes.

The home group (``EngineConfig.group``, ``agents`` by default) runs every agent declared
without a name: one per event type, as before agents had names, and the stream's chores
(dead-lettering what no agent takes, answering waits). An agent declared with
``name="triage"`` reads the stream in a group of its own, ``agents:triage``: its own pending
entries, lag, dead letters and pause. Each agent has its own gate namespace too: its runs
are keyed by a run hash, the event's hash for a home agent (so an upgrade finds every gate
record and row where it was), a hash of the event's and the agent's name for a named one.

An entry may be meant for one group alone (``for=<group>``): a redriven dead letter, a
resumed wait, a replay. Every other group acks it unread.
docs/agents.md#several-agents-on-one-event-type.
"""

from __future__ import annotations

import hashlib
import re

from workers.core.errors import ConfigurationError

# The field of an entry meant for one group only (a group name).
TARGET_FIELD = "for"
# A forced replay's field: a new run of an event its agent already ran (its value, the job,
# salts the run hash), linked to the run it repeats.
REPLAY_FIELD = "replay"
# What separates the home group's name from an agent's in the agent's group name.
GROUP_SEPARATOR = ":"
MAX_NAME_CHARS = 64
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")


def check_name(name: object) -> str:
    """An agent's name: letters, digits, ``_``, ``.`` and ``-``, 1 to 64 characters."""
    if not isinstance(name, str) or not 0 < len(name) <= MAX_NAME_CHARS or not _NAME.match(name):
        raise ConfigurationError(
            f"an agent's name must be 1 to {MAX_NAME_CHARS} letters, digits, '_', '.' or '-' "
            f"(starting with a letter or digit), got {name!r}"
        )
    return name


def group_of(home: str, agent: str) -> str:
    """The consumer group of agent ``agent`` ("" : an agent without a name, the home group)."""
    return f"{home}{GROUP_SEPARATOR}{agent}" if agent else home


def agent_of(home: str, group: str) -> str | None:
    """The agent name a group belongs to: "" for the home group, None for a group that is
    not one of this home's (an operator's, another fleet's)."""
    if group == home:
        return ""
    head = home + GROUP_SEPARATOR
    if group.startswith(head) and _NAME.match(group[len(head) :]):
        return group[len(head) :]
    return None


def run_hash(event_hash: str, agent: str, salt: str = "") -> str:
    """The key of one agent's run of one event: its gate record, its row, its steps. A home
    agent's is the event's hash itself; a forced replay (``salt``) is a new run."""
    if not agent and not salt:
        return event_hash
    return hashlib.sha256(f"{event_hash}|{agent}|{salt}".encode()).hexdigest()
