"""The database record of agent runs: the authority behind the idempotency gate."""

from __future__ import annotations

from django.db import models

from workers.steps import Kind


class RunStatus(models.TextChoices):
    RUNNING = "running", "running"
    SUCCEEDED = "succeeded", "succeeded"
    FAILED = "failed", "failed"
    DEAD = "dead", "dead-lettered"


class AgentRun(models.Model):
    """One row per event hash. ``lease`` names the attempt allowed to commit."""

    event_hash = models.CharField(max_length=64, unique=True)
    event_type = models.CharField(max_length=256, db_index=True)
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

    class Meta:
        indexes = [models.Index(fields=["status", "-created_at"], name="agentrun_status_created")]

    def __str__(self) -> str:
        return f"{self.event_type} {self.event_hash[:12]} {self.status}"


class TimelineStep(models.Model):
    """One stored step in an event's life, across its deliveries (``workers/steps.py``).

    Written by the engine in its grouped transactions, off the happy path only (a succeeded
    attempt's steps are read off its ``AgentRun`` row); read by ``workers/timeline.py``.
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
