"""Operator actions, one function each: the single implementation the console, the command
line and the API call (docs/actions.md).

Every function checks its input (``InvalidAction`` names the bad field; nothing is recorded
for input that never became an action), does the action through ``actions.py``, and writes
exactly one ``AuditRecord``: ``ok`` when it did something, ``noop`` when it was asked and did
nothing; also for a dry run (``dry-run``: nothing changed, the count is what would be acted
on), a refusal (``refused``, then ``ActionRefused`` is raised: ``NoSuchGroup`` for a stream or
group that does not exist; a claim to a consumer that may not take entries raises
``NotAClaimTarget``, an ``InvalidAction``, after its record) and a failure (``failed``, or
``partial`` when some of it was done, then the error is raised: Redis errors as
``RedisUnavailable`` or ``ActionFailed``, cause kept). Over 1,000 entries, or a dead-letter
filter, becomes a bulk job (``jobs.py``): the outcome is then ``queued`` and its ``job_id``
names the job.

Every action takes the Redis client and the key names (``client``, ``keys``) from its caller:
nothing here reads process-wide settings (the console and the CLI pass
``workers.from_settings.action_args()``). Those that hash a group's entries or letters, or
act on a run (retry, dead-letter, cancel, redrive, purge, its preview, force re-run) also
take ``home``, the home group's name (``EngineConfig.group``, ``agents`` by default): a
group's entries are its agent's runs (workers/core/fanout.py), never another agent's.
The actions live by family: ``pending.py``, ``dead_letters.py``, ``error_groups.py`` (a
whole error group, as a job), ``rerun.py`` (results), ``cancel.py``, ``answer.py`` (waiting
runs) and ``groups.py``; this module is their one door.
"""

from workers.operations.answer import answer
from workers.operations.cancel import cancel, cancel_entries
from workers.operations.dead_letters import purge, redrive
from workers.operations.error_groups import purge_group, retry_group
from workers.operations.groups import pause, resume
from workers.operations.pending import claim, claim_all, dead_letter, remove_consumer, retry_now
from workers.operations.preview import Preview, preview_redrive
from workers.operations.rerun import force_rerun
from workers.operations.steps import DIRECT_MAX
from workers.store.audit import ActionOutcome, Actor

__all__ = [
    "DIRECT_MAX",
    "ActionOutcome",
    "Actor",
    "Preview",
    "answer",
    "cancel",
    "cancel_entries",
    "claim",
    "claim_all",
    "dead_letter",
    "force_rerun",
    "pause",
    "preview_redrive",
    "purge",
    "purge_group",
    "redrive",
    "remove_consumer",
    "resume",
    "retry_group",
    "retry_now",
]
