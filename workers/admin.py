from __future__ import annotations

from django.contrib import admin

from workers.models import AgentRun, TimelineStep


@admin.register(AgentRun)
class AgentRunAdmin(admin.ModelAdmin):  # type: ignore[type-arg]
    list_display = ("event_type", "status", "attempts", "consumer", "created_at", "duration_ms")
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
