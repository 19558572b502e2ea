"""A bulk job's counts as the Jobs table shows them: done, skipped, failed, total."""

from __future__ import annotations

from django import template

from workers.models import BulkJob, JobStatus

register = template.Library()


@register.filter
def failed_entries(job: BulkJob) -> int | None:
    """Entries a failed job never got to (its total less what it did or skipped); 0 for a job
    that has not failed. None when it failed without a known total: the table says so."""
    if job.status != JobStatus.FAILED:
        return 0
    if job.total is None:
        return None
    return max(0, job.total - job.done - job.skipped)
