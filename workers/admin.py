from __future__ import annotations

from django.contrib import admin

from workers.models import AgentRun


@admin.register(AgentRun)
class AgentRunAdmin(admin.ModelAdmin):  # type: ignore[type-arg]
    list_display = ("event_type", "status", "attempts", "consumer", "created_at", "duration_ms")
    list_filter = ("status", "event_type")
    search_fields = ("event_hash", "event_id", "entry_id", "subject")
    readonly_fields = [f.name for f in AgentRun._meta.fields]
