"""The database record of agent runs: the authority behind the idempotency gate."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import Q

from workers.core.steps import Kind


class RunStatus(models.TextChoices):
    RUNNING = "running", "running"
    SUCCEEDED = "succeeded", "succeeded"
    FAILED = "failed", "failed"
    DEAD = "dead", "dead-lettered"
    # An operator cancelled it (workers/cancel/): it never runs again unless re-run.
    CANCELLED = "cancelled", "cancelled"
    # It waits for a time or an event, holding nothing (workers/waits/); it runs on after.
    WAITING = "waiting", "waiting"


class AgentRun(models.Model):
    """One row per event hash. ``lease`` names the attempt allowed to commit."""

    event_hash = models.CharField(max_length=64, unique=True)
    event_type = models.CharField(max_length=256)
    event_id = models.CharField(max_length=256, blank=True, default="")
    source = models.CharField(max_length=256, default="unknown")
    subject = models.CharField(max_length=256, blank=True, default="")
    stream = models.CharField(max_length=256)
    entry_id = models.CharField(max_length=64)
    status = models.CharField(max_length=16, choices=RunStatus.choices, default=RunStatus.RUNNING)
    # The gate's fencing token of the last attempt: how many times an agent started.
    attempts = models.PositiveIntegerField(default=1)
    # The entry's delivery count when the last attempt started (0: not recorded).
    deliveries = models.PositiveIntegerField(default=0)
    # The attempt that wrote the row last: "<consumer>/<entry id>#<token>".
    lease = models.CharField(max_length=600, blank=True, default="")
    # Set by an attempt that took over an expired lease: only that lease may commit.
    fence = models.CharField(max_length=600, blank=True, default="")
    consumer = models.CharField(max_length=256)
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    duration_ms = models.FloatField(null=True, blank=True)
    result = models.JSONField(null=True, blank=True)
    error = models.TextField(blank=True, default="")
    # What the run's model calls cost, over every attempt (a stored step is paid once).
    llm_calls = models.PositiveIntegerField(default=0)
    prompt_tokens = models.PositiveBigIntegerField(default=0)
    completion_tokens = models.PositiveBigIntegerField(default=0)
    # Estimated from STREAMDESK_LLM_PRICES; models missing from it count 0.
    cost_usd = models.FloatField(default=0.0)
    # The agent's version that wrote the row last (``@agent(version=)``, else a hash of its
    # handler's code): runs of two versions of an agent can be told apart.
    # db_default too: a worker of the version before (a rolling upgrade) writes rows without it.
    version = models.CharField(max_length=64, blank=True, default="", db_default="")
    # Which agent ran: its name (``@agent(name=)``), "" for its type's agent without a name.
    # The event's own hash (``event_hash`` is the run's: an agent's own, a forced replay's
    # new one); "" on rows from before, whose run hash is the event's. The run a forced
    # replay repeats (its run hash), "" for a first run. db_default: a rolling upgrade.
    agent = models.CharField(max_length=64, blank=True, default="", db_default="")
    event_key = models.CharField(max_length=64, blank=True, default="", db_default="")
    replay_of = models.CharField(max_length=64, blank=True, default="", db_default="")

    class Meta:
        # The Runs page (console/reads/runs.py) pages newest first by (created_at, id), alone
        # or after one equality filter: each has an index in that order, so a page reads a
        # page of index entries. The id is spelled out: PostgreSQL does not order by it
        # otherwise (SQLite's rowid already ends every index).
        indexes = [
            models.Index(fields=["created_at", "id"], name="agentrun_created"),
            models.Index(fields=["event_type", "created_at", "id"], name="agentrun_type_created"),
            models.Index(fields=["status", "created_at", "id"], name="agentrun_status_created_id"),
            models.Index(fields=["subject", "created_at", "id"], name="agentrun_subject_created"),
            # The event page of an entry trimmed from its stream finds its run by entry id.
            models.Index(fields=["stream", "entry_id"], name="agentrun_entry"),
            # Partial indexes, of named agents' runs and of replays only: the rows of agents
            # without a name (every row before names, and the hot path of most
            # deployments) pay no index upkeep for them. An event's other runs (the event
            # page, side by side): those of named agents by event_key (``agent <> ''``),
            # replays by the run they repeat. The Runs page by a named agent.
            models.Index(fields=["event_key"], name="agentrun_named_event", condition=~Q(agent="")),
            models.Index(
                fields=["replay_of"], name="agentrun_replay_of", condition=~Q(replay_of="")
            ),
            models.Index(
                fields=["agent", "created_at", "id"],
                name="agentrun_named_created",
                condition=~Q(agent=""),
            ),
        ]

    def __str__(self) -> str:
        return f"{self.event_type} {self.event_hash[:12]} {self.status}"


class TimelineStep(models.Model):
    """One stored step in an event's life, across its deliveries (``workers/engine/timeline.py``).

    Written by the engine in its grouped transactions, off the happy path only (a succeeded
    attempt's steps are read off its ``AgentRun`` row); read by ``workers/store/timeline_rows.py``.
    """

    event_hash = models.CharField(max_length=64)
    stream = models.CharField(max_length=256)
    entry_id = models.CharField(max_length=64)
    # The worker's clock.
    at = models.DateTimeField()
    kind = models.CharField(max_length=16, choices=[(k.value, k.value) for k in Kind])
    consumer = models.CharField(max_length=256, blank=True, default="")
    # The entry's delivery count when the step happened (0: unknown).
    attempt = models.PositiveIntegerField(default=0)
    detail = models.TextField(blank=True, default="")

    class Meta:
        indexes = [
            models.Index(fields=["event_hash", "at"], name="timeline_event_at"),
            # Finds the events of entries deleted while pending (rare, but a full scan).
            models.Index(fields=["stream", "entry_id"], name="timeline_entry"),
        ]

    def __str__(self) -> str:
        return f"{self.kind} {self.event_hash[:12]} {self.entry_id}"


class StepResult(models.Model):
    """A durable step's stored result (``ctx.step``, ``workers/store/durable_steps.py``): the
    function ran once for this event, and a redelivery gets this value instead of running it
    again."""

    event_hash = models.CharField(max_length=64)
    name = models.CharField(max_length=200)
    value = models.JSONField(null=True, blank=True)
    # The attempt (fencing token) and worker that ran it.
    token = models.PositiveIntegerField(default=0)
    consumer = models.CharField(max_length=256, blank=True, default="")
    duration_ms = models.FloatField(null=True, blank=True)
    created_at = models.DateTimeField()

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["event_hash", "name"], name="stepresult_event_name")
        ]

    def __str__(self) -> str:
        return f"{self.event_hash[:12]} {self.name}"


class Door(models.TextChoices):
    CONSOLE = "console", "console"
    CLI = "cli", "command line"
    API = "api", "API"
    # The engine itself (housekeeping removing a ghost consumer), not an operator.
    ENGINE = "engine", "engine"


class JobStatus(models.TextChoices):
    QUEUED = "queued", "queued"
    RUNNING = "running", "running"
    DONE = "done", "done"
    FAILED = "failed", "failed"
    CANCELLED = "cancelled", "cancelled"


class BulkJob(models.Model):
    """An action over many entries, worked through in batches; resumes after its cursor."""

    action = models.CharField(max_length=32)
    stream = models.CharField(max_length=256)
    group = models.CharField(max_length=256, blank=True, default="")
    # What to act on and how: the filter, target consumer, reason (workers/operations/jobs.py).
    params = models.JSONField(default=dict)
    status = models.CharField(max_length=16, choices=JobStatus.choices, default=JobStatus.QUEUED)
    cancel_requested = models.BooleanField(default=False)
    # The last entry id handled: a restarted job continues after it.
    cursor = models.CharField(max_length=64, blank=True, default="")
    total = models.PositiveIntegerField(null=True, blank=True)  # estimate, when known
    done = models.PositiveIntegerField(default=0)
    skipped = models.PositiveIntegerField(default=0)
    rate_per_s = models.FloatField(default=2000.0)
    created_by = models.CharField(max_length=256)
    door = models.CharField(max_length=16, choices=Door.choices)
    reason = models.TextField(blank=True, default="")
    # Which process runs it, and until when its claim holds (a dead runner's job is resumed).
    owner = models.CharField(max_length=256, blank=True, default="")
    lease_until = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    error = models.TextField(blank=True, default="")

    class Meta:
        indexes = [models.Index(fields=["status", "created_at"], name="bulkjob_status_created")]

    def __str__(self) -> str:
        return f"{self.action} on {self.stream} ({self.status}, {self.done} done)"


class AuditRecord(models.Model):
    """One operator action, whichever door it came through."""

    at = models.DateTimeField(auto_now_add=True, db_index=True)
    actor = models.CharField(max_length=256)
    door = models.CharField(max_length=16, choices=Door.choices)
    action = models.CharField(max_length=32, db_index=True)
    stream = models.CharField(max_length=256, blank=True, default="")
    group = models.CharField(max_length=256, blank=True, default="")
    # Entry ids (the first 1,000) or the filter the action matched.
    target = models.JSONField(default=dict)
    count = models.PositiveIntegerField(default=0)
    skipped = models.PositiveIntegerField(default=0)
    reason = models.TextField(blank=True, default="")
    outcome = models.CharField(max_length=16)  # workers.store.audit.Result
    detail = models.TextField(blank=True, default="")
    job = models.ForeignKey(BulkJob, null=True, blank=True, on_delete=models.SET_NULL)

    class Meta:
        ordering = ["-at", "-id"]
        permissions = [
            ("view_console", "Can see the console"),
            ("operate", "Can act on streams: claim, retry, dead-letter, redrive, purge, pause"),
        ]

    def __str__(self) -> str:
        return f"{self.at:%Y-%m-%d %H:%M:%S} {self.actor} {self.action} {self.outcome}"


class ApiToken(models.Model):
    """A bearer token for /api/; only its SHA-256 is stored, the token is shown once."""

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="api_tokens"
    )
    name = models.CharField(max_length=128)
    key_hash = models.CharField(max_length=64, unique=True)
    prefix = models.CharField(max_length=12)  # the token's first characters, to recognise it
    created_at = models.DateTimeField(auto_now_add=True)
    last_used_at = models.DateTimeField(null=True, blank=True)

    def __str__(self) -> str:
        return f"{self.name} ({self.prefix}…) for {self.user}"


class OutboxEvent(models.Model):
    """An event written in the same transaction as the change it describes
    (``workers/producers/outbox.py``).

    The relay (``workers/producers/relay.py``) publishes unsent rows in id order with ``id`` as the
    event id, then sets ``sent_at``: a rolled-back change leaves no row, so publishes nothing.
    """

    created_at = models.DateTimeField(auto_now_add=True)
    stream = models.CharField(max_length=256)
    type = models.CharField(max_length=256)
    source = models.CharField(max_length=256, default="outbox")
    subject = models.CharField(max_length=256, blank=True, default="")
    data = models.JSONField()
    context = models.JSONField(null=True, blank=True)
    idempotency_key = models.CharField(max_length=512, blank=True, default="")
    sent_at = models.DateTimeField(null=True, blank=True)
    # Failed relay attempts (Redis down...) and the last error, for operators.
    attempts = models.PositiveIntegerField(default=0)
    last_error = models.TextField(blank=True, default="")

    class Meta:
        indexes = [
            # The relay's only query: unsent rows in id order. Partial, so it stays small.
            models.Index(
                fields=["id"], condition=models.Q(sent_at__isnull=True), name="outbox_unsent"
            ),
        ]

    def __str__(self) -> str:
        state = "sent" if self.sent_at else "unsent"
        return f"outbox {self.pk} {self.type} {self.subject} ({state})"


class GraphCheckpoint(models.Model):
    """A LangGraph checkpoint (``workers/runtime/graph/``): the graph's state after a step, whole
    and serialized by the saver's serde. The thread of an agent's graph is its event hash."""

    thread_id = models.CharField(max_length=255)
    checkpoint_ns = models.CharField(max_length=512, blank=True, default="")
    # uuid6 strings: they sort in the order the checkpoints were made.
    checkpoint_id = models.CharField(max_length=64)
    parent_id = models.CharField(max_length=64, blank=True, default="")
    checkpoint_type = models.CharField(max_length=32)
    checkpoint = models.BinaryField()
    metadata_type = models.CharField(max_length=32)
    metadata = models.BinaryField()
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            # Also the index behind "the latest checkpoint of a thread" (highest id).
            models.UniqueConstraint(
                fields=["thread_id", "checkpoint_ns", "checkpoint_id"], name="graphcheckpoint_id"
            )
        ]

    def __str__(self) -> str:
        return f"{self.thread_id[:12]} {self.checkpoint_ns} {self.checkpoint_id}"


class GraphWrite(models.Model):
    """A pending write of a graph task, made after the checkpoint it belongs to: on resume the
    tasks that wrote them are not run again."""

    thread_id = models.CharField(max_length=255)
    checkpoint_ns = models.CharField(max_length=512, blank=True, default="")
    checkpoint_id = models.CharField(max_length=64)
    task_id = models.CharField(max_length=64)
    # The write's index in its task; special writes (errors, interrupts) are negative.
    idx = models.IntegerField()
    channel = models.CharField(max_length=255)
    value_type = models.CharField(max_length=32)
    value = models.BinaryField()
    task_path = models.TextField(blank=True, default="")

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["thread_id", "checkpoint_ns", "checkpoint_id", "task_id", "idx"],
                name="graphwrite_task_idx",
            )
        ]

    def __str__(self) -> str:
        return f"{self.thread_id[:12]} {self.checkpoint_id} {self.task_id} {self.channel}"
