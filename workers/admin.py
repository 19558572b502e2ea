from __future__ import annotations

import csv
from typing import Any

from django.contrib import admin
from django.http import HttpRequest, HttpResponse

from workers.models import AgentRun, ApiToken, AuditRecord, BulkJob, StepResult, TimelineStep
from workers.operations.spreadsheet import safe_row


@admin.register(AgentRun)
class AgentRunAdmin(admin.ModelAdmin):  # type: ignore[type-arg]
    list_display = (
        "event_type", "status", "attempts", "consumer", "created_at", "duration_ms",
        "llm_calls", "cost_usd",
    )  # fmt: skip
    list_filter = ("status", "event_type")
    search_fields = ("event_hash", "event_id", "entry_id", "subject")
    readonly_fields = [f.name for f in AgentRun._meta.fields]


@admin.register(TimelineStep)
class TimelineStepAdmin(admin.ModelAdmin):  # type: ignore[type-arg]
    """Read-only: the engine writes the timeline."""

    list_display = ("at", "kind", "event_hash", "entry_id", "consumer", "attempt")
    list_filter = ("kind",)
    search_fields = ("=event_hash", "=entry_id")

    def has_add_permission(self, request: object) -> bool:
        return False

    def has_change_permission(self, request: object, obj: object = None) -> bool:
        return False


@admin.register(StepResult)
class StepResultAdmin(admin.ModelAdmin):  # type: ignore[type-arg]
    """Read-only: durable steps are the engine's record of what already ran."""

    list_display = ("created_at", "event_hash", "name", "consumer", "token", "duration_ms")
    search_fields = ("=event_hash", "name")
    readonly_fields = [f.name for f in StepResult._meta.fields]

    def has_add_permission(self, request: object) -> bool:
        return False

    def has_change_permission(self, request: object, obj: object = None) -> bool:
        return False


@admin.action(description="Export selected as CSV")
def export_csv(modeladmin: Any, request: HttpRequest, queryset: Any) -> HttpResponse:
    fields = [f.name for f in queryset.model._meta.fields]
    response = HttpResponse(content_type="text/csv")
    response["Content-Disposition"] = (
        f'attachment; filename="{queryset.model._meta.model_name}.csv"'
    )
    writer = csv.writer(response)
    writer.writerow(fields)
    for row in queryset.iterator(chunk_size=2000):
        writer.writerow(safe_row([getattr(row, f) for f in fields]))
    return response


class ReadOnly(admin.ModelAdmin):  # type: ignore[type-arg]
    """Records of what happened: nobody edits them by hand."""

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return False


@admin.register(AuditRecord)
class AuditRecordAdmin(ReadOnly):
    list_display = (
        "at",
        "actor",
        "door",
        "action",
        "stream",
        "group",
        "count",
        "skipped",
        "outcome",
    )
    list_filter = ("action", "outcome", "door")
    search_fields = ("actor", "stream", "reason")
    date_hierarchy = "at"
    actions = [export_csv]


@admin.register(BulkJob)
class BulkJobAdmin(ReadOnly):
    list_display = ("id", "action", "stream", "status", "done", "skipped", "total", "created_by")
    list_filter = ("status", "action")


@admin.register(ApiToken)
class ApiTokenAdmin(admin.ModelAdmin):  # type: ignore[type-arg]
    """Tokens are created with ``manage.py apitoken create`` (shown once); here they are revoked."""

    list_display = ("name", "prefix", "user", "created_at", "last_used_at")
    readonly_fields = ("name", "prefix", "user", "key_hash", "created_at", "last_used_at")

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False
